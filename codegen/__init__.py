"""hogen: numerically stable higher-order custom gradients for TensorFlow, from a YAML spec.

The pipeline, one module per stage: `spec` (YAML -> Spec), `derive` (Spec ->
Derivatives), `stabilize` (Derivatives -> StableForms), `emit` (StableForms ->
module source). `accuracy` measures forms against an exact reference; `verify`
runs generated ops in TensorFlow; `cli` is the only module that touches files.
"""

__version__ = "0.1.0"
