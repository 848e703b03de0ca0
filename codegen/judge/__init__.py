"""The judge: how accuracy is measured, with no framework.

`accuracy` samples inputs, evaluates exact references in ball arithmetic and
scores approximations in bits; `numeric` runs a lowered program in NumPy the
way TensorFlow's kernels compute it, so the stabilizer can measure a form
without TensorFlow.
"""
