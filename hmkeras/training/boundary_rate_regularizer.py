"""A penalty that keeps each layer's boundary rate near a target.

An extension beyond Chung et al. (2017) and Kadar et al. (2018), off unless
asked for.  A hierarchical cell's boundary detectors can drift to firing
never (the upper layers then never update and get no gradient) or always
(every layer FLUSHes or UPDATEs at every step: no segmentation is left);
Kadar et al. Table 2 shows both.  The penalty

    R = weight * sum_l (r_l - r*_l) ** 2,
    r_l = mean over the batch and the steps of z^l_t                  (1)

pulls the rate `r_l` of every boundary layer toward a target `r*_l`.  In the
discrete modes the value uses the binary `z`, so `r_l` is the boundary rate a
`BoundaryMonitor` reports; its gradient reaches the detectors through the
straight-through estimator, i.e. it is the gradient of (1) with `z` replaced
by `z~ = hard_sigm(s_z)` (Chung et al. Eq. 8-9).  Like that estimator it is
zero for a detector saturated at 0 or 1 (`|a s_z| >= 1`): the penalty keeps
a rate in range from the start of training rather than reviving a dead
detector.

It reads the last `len(target_rates)` columns of a hierarchical cell's
sequence output `[h^1 | ... | h^L | z^1 ... z^{L-1}]`, so it can be given to
the RNN as its activity regularizer (the RNN must return sequences and no
state) or called on that output in a custom `train_step`.

Example:

>>> import keras, numpy as np, hmkeras
>>> cell = hmkeras.HMLSTMCell(8, num_layers=3)
>>> rnn = keras.layers.RNN(
...     cell, return_sequences=True,
...     activity_regularizer=hmkeras.BoundaryRateRegularizer([0.3, 0.1], weight=1.0))
>>> y = rnn(np.random.default_rng(0).normal(size=(2, 6, 4)).astype("float32"))
>>> len(rnn.losses)
1
"""

import keras
import numpy as np
import tensorflow as tf

from hmkeras.cells import argument_checks


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryRateRegularizer(keras.regularizers.Regularizer):
    """`weight * sum_l (rate(z^l) - target_l) ** 2` of a hierarchical output.

    Args:
        target_rates: One target boundary rate in [0, 1] per boundary layer
            (`num_layers - 1` of them, bottom first; a list, tuple or 1-D
            array, Python or NumPy numbers); `None` leaves that layer
            without penalty.
        weight: Finite, non-negative factor of the penalty (default 1).
            Cross entropies are in nats, so a weight of 1 makes a rate 0.3
            away from its target cost 0.09 nats per character.

    Call arguments:
        outputs: The `(batch, time, output_size)` sequence output of an RNN
            over an `HMLSTMCell` / `HMRNNCell`.

    Returns:
        The scalar penalty (float32; float64 for float64 outputs).
    """

    def __init__(self, target_rates, weight=1.0):
        rates = None
        if isinstance(target_rates, (list, tuple)):
            rates = list(target_rates)
        elif isinstance(target_rates, np.ndarray) and target_rates.ndim == 1:
            rates = target_rates.tolist()
        allowed = (
            "a non-empty list with one rate in [0, 1] (or None to leave a "
            "layer free) per boundary layer (num_layers - 1 values)"
        )
        if not rates:
            raise ValueError(
                f"`target_rates` must be {allowed}. "
                f"Received: target_rates={target_rates!r}"
            )
        try:
            self.target_rates = [
                argument_checks.check_fraction("target_rates", rate, allow_none=True)
                for rate in rates
            ]
        except ValueError:
            raise ValueError(
                f"`target_rates` must be {allowed}. "
                f"Received: target_rates={target_rates!r}"
            ) from None
        self.weight = argument_checks.check_float("weight", weight, minimum=0)

    def rates(self, outputs):
        """The per-layer boundary rates `r_l` of Eq. (1), `(L-1,)`, in float32
        (float64 for float64 outputs)."""
        outputs = tf.convert_to_tensor(outputs)
        if outputs.shape.rank != 3:
            raise ValueError(
                "BoundaryRateRegularizer needs the (batch, time, features) "
                "sequence output of a hierarchical cell: use the RNN with "
                "return_sequences=True and return_state=False. Received a "
                f"tensor of shape {tuple(outputs.shape)}."
            )
        boundaries = outputs[..., -len(self.target_rates):]
        dtype = tf.float64 if outputs.dtype == tf.float64 else tf.float32
        return tf.reduce_mean(tf.cast(boundaries, dtype), axis=[0, 1])

    def __call__(self, outputs):
        rates = self.rates(outputs)
        penalty = tf.zeros((), rates.dtype)
        for index, target in enumerate(self.target_rates):
            if target is not None:
                penalty += tf.square(rates[index] - target)  # Eq. (1)
        return self.weight * penalty

    def get_config(self):
        return {"target_rates": list(self.target_rates), "weight": self.weight}
