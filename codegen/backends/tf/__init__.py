"""The TensorFlow backend: `module` plans the generated module (one
`tf.custom_gradient` op whose gradient is a Taylor jet) and `source` prints
lowered programs as TensorFlow calls."""
