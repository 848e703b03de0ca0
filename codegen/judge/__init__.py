"""The judge: how accuracy is measured, with no framework.

`accuracy` samples inputs, evaluates exact references in ball arithmetic and
scores approximations in bits; `numeric` runs a lowered program in NumPy the
way TensorFlow's kernels compute it, so the stabilizer can measure a form
without TensorFlow.

Also here, without NumPy for the command line's sake: which points are for what. Builds
choose their forms on the points of seeds 0 and 1 (`stabilize.measuring`); `hogen verify`,
the report, the corpus and the backend tests score seed 2's, whose draws no build sees (the
special points, such as 0, ±1, ±88 and the domain's edges, are in every seed's sample). A figure
measured on the points a form was chosen on flatters it: the corpus kept the promise on 76
of 80 dev expressions at seed 0's points and on 66 at seed 2's.
"""

CHOICE_SEEDS = (0, 1)
VERIFY_SEED = 2
