"""Every op in generated_torch/: torch.func and nested autograd agree on value, f' and f'';
low precision keeps its dtype; several args broadcast with gradients reduced to each
input's shape.

Accuracy of every partial against the exact reference is `hogen verify --backend torch`'s,
run per op by the generated tests in tests/generated_torch/. Here values are compared with
the same op in float64 at moderate points inside each domain (float64 itself measured there).
"""

import numpy as np
import pytest
from backend_checks import moderate

torch = pytest.importorskip("torch")
from torch import func  # noqa: E402

import generated_torch  # noqa: E402

OPS = sorted(generated_torch.__all__)


def _func_two(op):
    d1 = func.grad(op, argnums=0)
    d2 = func.grad(d1, argnums=0)
    return lambda *a: tuple(func.vmap(f)(*a) for f in (op, d1, d2))


def _autograd_two(op, args):
    x = args[0].clone().requires_grad_(True)
    y = op(x, *args[1:])
    (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), x)
    return y.detach(), d1.detach(), d2


def _columns(name, dtype):
    return [torch.tensor(c, dtype=dtype) for c in moderate(name)]


@pytest.mark.parametrize("name", OPS)
def test_torch_func_agrees_with_nested_autograd(name):
    op = getattr(generated_torch, name)
    args = _columns(name, torch.float64)
    for a, b in zip(_func_two(op)(*args), _autograd_two(op, args)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype, rtol", [(torch.float16, 4e-3), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("name", OPS)
def test_low_precision_keeps_its_dtype_within_its_precision(name, dtype, rtol):
    op = getattr(generated_torch, name)
    low = _autograd_two(op, _columns(name, dtype))
    high = _autograd_two(op, _columns(name, torch.float64))
    for got, want in zip(low, high):
        assert got.dtype == dtype
        want = want.numpy()
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(got.double().numpy(), want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", [n for n in OPS if n in ("hypot", "logaddexp")])
def test_two_args_broadcast_and_gradients_take_input_shapes(name):
    op = getattr(generated_torch, name)
    x = torch.tensor([[0.5], [1.5], [-2.0]], requires_grad=True)
    y = torch.tensor([0.25, 3.0], requires_grad=True)
    out = op(x, y)
    assert out.shape == (3, 2)
    gx, gy = torch.autograd.grad(out.sum(), (x, y), create_graph=True)
    assert gx.shape == x.shape and gy.shape == y.shape
    (gyx,) = torch.autograd.grad(gy.sum(), x)
    assert gyx.shape == x.shape
