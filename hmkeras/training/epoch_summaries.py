"""`EpochSummaries`: every epoch's logs as TensorBoard scalars.

Examples:

    >>> import os, tempfile
    >>> logs = tempfile.mkdtemp()
    >>> summaries = EpochSummaries(logs, skip=("batch_bpc",))
    >>> summaries.on_epoch_end(0, {"bpc": 1.5, "batch_bpc": 1.4})
    >>> len(os.listdir(logs))
    1
"""

import keras
import tensorflow as tf
from tensorflow.core.framework import summary_pb2


def _scalar_metadata():
    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))


class EpochSummaries(keras.callbacks.Callback):
    """Writes every epoch's logs as TensorBoard scalars (`epoch_<name>` in
    `log_dir`, step `epoch + 1`).

    Uses `tf.summary.write` with the scalar plugin's metadata, so the event
    files are read by TensorBoard although this needs no `tensorboard`
    package (Keras' TensorBoard callback does).

    Args:
        log_dir: The directory of the event files (made on the first write).
        when: A callable; epochs for which it returns False are not written
            (e.g. an epoch interrupted before its validation).
        skip: Names of logs not written (per-batch values).
    """

    def __init__(self, log_dir, when=None, skip=("batch_bpc",)):
        super().__init__()
        self.log_dir = log_dir
        self.when = when
        self.skip = tuple(skip)
        self._writer = None

    def on_epoch_end(self, epoch, logs=None):
        if not logs or (self.when is not None and not self.when()):
            return
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        with self._writer.as_default():
            for name, value in logs.items():
                if name in self.skip:
                    continue
                tf.summary.write(f"epoch_{name}", tf.constant(float(value)),
                                 step=epoch + 1, metadata=_scalar_metadata())
        self._writer.flush()
