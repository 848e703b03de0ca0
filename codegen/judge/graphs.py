"""The mirror's "graph" path: sums and products as Grappler regroups them in TensorFlow graphs.

In: a `Program` (from `lower`). Out: the same program with each tree of adds, and each tree
of multiplies, rebuilt the way TensorFlow's graph optimizer (Grappler's arithmetic
optimizer) rebuilds it before a graph runs: in `tf.function`, SavedModel, TF1 graphs and
Keras `fit` without XLA. Exact arithmetic gives the same values; rounding, overflow and
underflow differ. A tree is a root add (multiply) and the adds (multiplies) that feed only
it, taken from the outputs back, so the largest trees form first; its leaves are read left
to right. First, as Grappler does before it regroups:

- dead steps are pruned; x/sqrt(y) runs as x*rsqrt(y) where nothing else uses the sqrt
  (SqrtDivToRsqrtMul), and x/c as x*(1/c), 1/c rounded in the dtype
  (ReduceDivToReciprocalMul);
- `ConstantPushDown`: a constant beside a step of its family used only there moves into it,
  so (x + c1) - c2 runs as x + (c1 - c2), the constants folded in the dtype.

Then each tree:

- `AddOpsRewrite`: the leaves of one shape are summed by one AddN, left to right (a right-
  nested a + (b + c) becomes (a + b) + c); where scalar constants and tensors mix, the
  constants' sum is added to the tensors' sum last; a leaf that repeats is added once,
  times its count (SimplifyAggregation).
- `MinimizeBroadcasts`: where scalar constants and tensors mix in a product, the leaves are
  sorted constants first and multiplied in pairs, the pairs queued behind the leaves:
  c*a*b*d becomes (c*a)*(b*d). d_smooth_abs's f_eps, 0.5*s*(x/p)*(x/q) in float32 at
  x = 1.09e-20, became 0.5*s*((x/p)*(x/q)), whose inner product is subnormal and flushed
  to zero, so `tf.function` returned -0.0 for -3.08e-38 while eager and XLA were right.

The model follows Grappler's source (arithmetic_optimizer.cc, constant_folding.cc) and is
checked against TensorFlow itself by tests/test_graph_mirror.py and, on random programs, by
benchmarks/graph_mirror.py. Common-factor hoisting (a*b + a*c -> a*(b + c)) and fused
multiply-adds are not modelled.
"""

from __future__ import annotations

import functools
from collections import Counter, deque

from codegen.lower import Program, Step

GROUPED_OPS = ("add", "mul")


@functools.lru_cache(maxsize=4096)  # each candidate is run per dtype, and screened again
def regrouped(program: Program) -> Program:
    """`program` with every tree of adds and of multiplies rebuilt as Grappler rebuilds it."""
    program = _pushed_down(_reciprocal_products(_rsqrt_products(_live(program))))
    scalars, uses = _scalars(program.steps), _uses(program)
    made_by = {s.target: s for s in program.steps}
    tagged: set[str] = set()  # steps of a tree already taken: no other tree takes them
    removed: set[str] = set()  # steps of a rebuilt tree other than its root
    rebuilt: dict[str, list[Step]] = {}
    for step in reversed(program.steps):
        if step.op not in GROUPED_OPS or step.target in tagged:
            continue
        members, leaves = _tree(step, made_by, uses, tagged, scalars)
        if len(members) < 2:
            continue
        tagged.update(members)
        if step.op == "add":
            new = [] if _left_deep(members, made_by) and _one_shape(leaves) else _sum(step, leaves)
        else:
            new = _product(step.target, leaves)
        if new:
            rebuilt[step.target] = new
            removed.update(members[1:])
    if not rebuilt:
        return program
    steps = []
    for step in program.steps:
        if step.target not in removed:
            steps.extend(rebuilt.get(step.target, [step]))
    return Program(tuple(steps), program.outputs)


def _reciprocal_products(program: Program) -> Program:
    """Constant folding's ReduceDivToReciprocalMul: x/c runs as x*(1/c), 1/c rounded in the
    dtype, and the product joins the trees of multiplies."""
    steps = []
    for step in program.steps:
        x, c = step.operands if step.op == "div" else (None, None)
        if not (_is_name(x) and c is not None and not _is_name(c)):
            steps.append(step)
            continue
        reciprocal = f"{step.target}_r"
        steps += [Step(reciprocal, "div", (1.0, c)), Step(step.target, "mul", (x, reciprocal))]
    return Program(tuple(steps), program.outputs) if len(steps) > len(program.steps) else program


def _rsqrt_products(program: Program) -> Program:
    """SqrtDivToRsqrtMul: x/sqrt(y) runs as x*rsqrt(y) where nothing else uses the sqrt."""
    uses, made_by = _uses(program), {s.target: s for s in program.steps}
    rsqrt = {
        s.operands[1]
        for s in program.steps
        if s.op == "div"
        and _is_name(s.operands[1])
        and uses[s.operands[1]] == 1
        and made_by.get(s.operands[1], s).op == "sqrt"
    }
    if not rsqrt:
        return program
    steps = []
    for step in program.steps:
        if step.target in rsqrt:
            step = Step(step.target, "rsqrt", step.operands)
        elif step.op == "div" and step.operands[1] in rsqrt:
            step = Step(step.target, "mul", step.operands)
        steps.append(step)
    return Program(tuple(steps), program.outputs)


def _is_name(operand) -> bool:
    return isinstance(operand, str)


def _live(program: Program) -> Program:
    """`program` without the steps no output needs (Grappler prunes them first)."""
    needed = {o for o in program.outputs if _is_name(o)}
    for step in reversed(program.steps):
        if step.target in needed:
            needed.update(o for o in step.operands if _is_name(o))
    steps = tuple(s for s in program.steps if s.target in needed)
    return program if len(steps) == len(program.steps) else Program(steps, program.outputs)


def _scalars(steps) -> set[str]:
    """Targets of the steps computed from constants only."""
    scalars: set[str] = set()
    for step in steps:
        if all(not _is_name(o) or o in scalars for o in step.operands):
            scalars.add(step.target)
    return scalars


def _uses(program: Program) -> Counter:
    uses = Counter(o for s in program.steps for o in s.operands if _is_name(o))
    uses.update(o for o in program.outputs if _is_name(o))
    return uses


_FAMILY = {"add": "add", "sub": "add", "mul": "mul"}
PUSH_ROUNDS = 4


def _pushed_down(program: Program) -> Program:
    """Constant folding's ConstantPushDown, to a fixed point: an add, subtract or multiply of
    a constant C and a step of its family used only there, op(X, Y), becomes X op (C op Y),
    signs kept: (x + y) + c runs as x + (c + y), and (x + c1) - c2 as x + (c1 - c2), its
    constants folded in the dtype."""
    steps = list(program.steps)
    for _ in range(PUSH_ROUNDS):
        scalars, uses = _scalars(steps), _uses(Program(tuple(steps), program.outputs))
        at = {s.target: i for i, s in enumerate(steps)}
        changed = False
        for parent in list(steps):
            pushed = _push(steps[at[parent.target]], steps, at, uses, scalars)
            if pushed is not None:
                new_parent, new_child = pushed
                steps[at[new_parent.target]], steps[at[new_child.target]] = pushed
                scalars = _scalars(steps)
                changed = True
        if not changed:
            break
    return Program(tuple(steps), program.outputs) if steps != list(program.steps) else program


def _push(parent: Step, steps: list, at: dict, uses: Counter, scalars: set):
    """(parent, child) as ConstantPushDown rewrites them, or None where it does not apply."""
    if parent.op not in _FAMILY or len(parent.operands) != 2:
        return None
    const = [not _is_name(o) or o in scalars for o in parent.operands]
    if const[0] == const[1]:
        return None
    c_first = const[0]
    c, inner = parent.operands if c_first else parent.operands[::-1]
    child = steps[at[inner]] if inner in at else None
    if child is None or uses[inner] != 1 or _FAMILY.get(child.op) != _FAMILY[parent.op]:
        return None
    leaf_const = [not _is_name(o) or o in scalars for o in child.operands]
    if all(leaf_const):
        return None
    x_right = leaf_const[0]  # X is the non-constant leaf, the left one if both are not
    x, y = (child.operands[1], child.operands[0]) if x_right else child.operands
    if parent.op == "mul" or (parent.op == "add" and child.op == "add"):
        return Step(parent.target, parent.op, (x, inner)), Step(inner, child.op, (c, y))
    return _push_signed(parent, child, c, x, y, c_first, x_right)


def _push_signed(parent: Step, child: Step, c, x, y, c_first: bool, x_right: bool):
    """ConstantPushDown where a subtraction is the parent or the child: the signs of C, X and
    Y carried into the new parent and child."""
    parent_sym, child_sym = parent.op == "add", child.op == "add"

    def negated(is_right_leaf: bool) -> bool:
        return (not child_sym and is_right_leaf) != (not parent_sym and c_first)

    neg_c = not parent_sym and not c_first
    neg_x, neg_y = negated(x_right), negated(not x_right)
    parent_op = "sub" if neg_x or (neg_c and neg_y) else "add"
    parent_in = (child.target, x) if neg_x else (x, child.target)
    child_op = "sub" if neg_c != neg_y else "add"
    child_in = (y, c) if neg_c else (c, y)
    return Step(parent.target, parent_op, parent_in), Step(child.target, child_op, child_in)


def regrouped_in_graphs(program: Program) -> bool:
    """True if Grappler may regroup a sum or product of `program`: only then can the "graph"
    path differ from "eager"."""
    return regrouped(program) != program


def _tree(root: Step, made_by: dict, uses: Counter, tagged: set, scalars: set):
    """(targets of the tree's steps, its leaves left to right as (operand, is a scalar)):
    the steps of root's op that feed only the tree, as Grappler absorbs them (a step used
    twice stays a leaf). Constants, and steps of constants only, are scalars."""
    members, leaves = [root.target], []

    def visit(operand) -> None:
        step = made_by.get(operand) if isinstance(operand, str) else None
        inner = step is not None and step.op == root.op and uses[operand] == 1
        inner = inner and operand not in scalars  # constant folding made it a constant
        if inner and operand not in tagged:
            members.append(operand)
            for o in step.operands:
                visit(o)
        else:
            leaves.append((operand, not _is_name(operand) or operand in scalars))

    for operand in root.operands:
        visit(operand)
    return members, leaves


def _left_deep(members: list[str], made_by: dict) -> bool:
    """True if no step of the tree takes another as its second operand: ((a + b) + c) + d,
    which one AddN sums in the same order."""
    return all(made_by[m].operands[1] not in members for m in members)


def _one_shape(leaves: list) -> bool:
    return len({scalar for _, scalar in leaves}) == 1


class _Steps:
    """New steps for one tree, their targets derived from the root's."""

    def __init__(self, root: str):
        self.root, self.steps = root, []

    def emit(self, op: str, a, b, last: bool = False) -> str:
        target = self.root if last else f"{self.root}_g{len(self.steps)}"
        self.steps.append(Step(target, op, (a, b)))
        return target


def _sum(root: Step, leaves: list) -> list[Step]:
    """AddOpsRewrite: one AddN per shape, summing left to right; constants' sum first."""
    out = _Steps(root.target)
    scalars = [leaf for leaf, scalar in leaves if scalar]
    tensors = [leaf for leaf, scalar in leaves if not scalar]
    if not scalars or not tensors:
        _add_n(out, [leaf for leaf, _ in leaves], last=True)
        return out.steps
    constant = _add_n(out, scalars, last=False)
    tensor = _add_n(out, tensors, last=False)
    out.emit("add", constant, tensor, last=True)
    return out.steps


def _add_n(out: _Steps, leaves: list, last: bool):
    """One AddN, left to right; a leaf that repeats is added once, times its count
    (SimplifyAggregation: x + y + x runs as 2*x + y)."""
    counts = Counter(leaves)
    if len(counts) < len(leaves):
        alone = last and len(counts) == 1  # x + x + x: the product is the root
        leaves = [
            leaf if counts[leaf] == 1 else out.emit("mul", leaf, float(counts[leaf]), alone)
            for leaf in counts
        ]
    total = leaves[0]
    for i, leaf in enumerate(leaves[1:], start=2):
        total = out.emit("add", total, leaf, last=last and i == len(leaves))
    return total


def _product(root: str, leaves: list) -> list[Step]:
    """MinimizeBroadcasts: leaves sorted constants first, multiplied in pairs, each pair
    queued behind the leaves (at the front where the two next leaves are a constant and a
    tensor); an odd last leaf multiplies the result. A tree of one shape is left alone."""
    if _one_shape(leaves):
        return []  # no broadcast to minimize: the tree stays as written
    out = _Steps(root)
    queue = deque(sorted(leaves, key=lambda leaf: not leaf[1]))  # stable: scalars first
    leftover = queue.pop() if len(queue) % 2 else None
    while len(queue) > 1:
        (a, _), (b, _) = queue.popleft(), queue.popleft()
        done = leftover is None and not queue
        pair = (out.emit("mul", a, b, last=done), True)  # a new node's shape reads as scalar
        if len(queue) >= 2 and queue[0][1] and not queue[1][1]:
            queue.appendleft(pair)
        else:
            queue.append(pair)
    if leftover is not None:
        out.emit("mul", queue[0][0], leftover[0], last=True)
    return out.steps
