"""The files a training example writes in its run directory (--output_dir).

`write_run_files` writes, before training starts, what rebuilds the run:
`model_config.json` (the model's configuration, `to_json`), `settings.json`
(every setting of the run, the flags included) and, for the text models,
`vocabulary.json`. It imports nothing heavy.
"""

import json
import os


def write_run_files(output_dir, config, settings, vocabulary=None):
    """Makes `output_dir` and writes its `vocabulary.json` (when
    `vocabulary` is given: `vocabulary.save`), `model_config.json`
    (`config.to_json()`) and `settings.json` (`settings`, keys sorted)."""
    os.makedirs(output_dir, exist_ok=True)
    if vocabulary is not None:
        vocabulary.save(os.path.join(output_dir, "vocabulary.json"))
    with open(os.path.join(output_dir, "model_config.json"), "w") as f:
        f.write(config.to_json())
    with open(os.path.join(output_dir, "settings.json"), "w") as f:
        json.dump(settings, f, indent=2, sort_keys=True)
