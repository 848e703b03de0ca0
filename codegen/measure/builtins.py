"""The frameworks' own ops that compute a library spec, measured beside hogen's by `report`.

In: an op name and a backend (tf, jax, torch). Out: a `Builtin` (its label as a user would
write it, a callable on the args and the spec's params, and what a reader should know), or
none where the framework has no such op. Each framework is imported only when one of its
callables first runs, so importing this module imports no framework.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Builtin:
    """A framework's op computing a spec: its label, a callable (args, **params), a note."""

    label: str
    fn: Callable
    note: str = ""


def _module(name: str):
    return importlib.import_module(name)


def _tf():
    return _module("tensorflow")


def _jnn():
    return _module("jax.nn")


def _jnp():
    return _module("jax.numpy")


def _jsp():
    return _module("jax.scipy.special")


def _torch():
    return _module("torch")


def _tnnf():
    return _module("torch.nn.functional")


_GELU_NOTE = (
    "In float64 it is only about as accurate as float32: it scales x by "
    "`math_ops.cast(0.7071067811865476, dtype)`, a float32 constant cast up."
)
_POISSON_NOTE = (
    "The framework's loss is exp(r) - k r; its full=True term is Stirling's approximation of "
    "lgamma(k + 1), so the exact lgamma is added here."
)
_SINC_NOTE = "Normalized sinc, so x / pi is rounded before it."

TF: dict[str, Builtin] = {
    "log1pexp": Builtin("tf.nn.softplus(x)", lambda x: _tf().nn.softplus(x)),
    "sigmoid": Builtin("tf.math.sigmoid(x)", lambda x: _tf().math.sigmoid(x)),
    "log_sigmoid": Builtin("tf.math.log_sigmoid(x)", lambda x: _tf().math.log_sigmoid(x)),
    "silu": Builtin("tf.nn.silu(x)", lambda x: _tf().nn.silu(x)),
    "gelu": Builtin(
        "tf.nn.gelu(x, approximate=False)", lambda x: _tf().nn.gelu(x, False), _GELU_NOTE
    ),
    "xlogx": Builtin("tf.math.xlogy(x, x)", lambda x: _tf().math.xlogy(x, x)),
    "xlogy": Builtin("tf.math.xlogy(x, y)", lambda x, y: _tf().math.xlogy(x, y)),
    "softplus_beta": Builtin(
        "tf.nn.softplus(beta * x) / beta", lambda x, beta: _tf().nn.softplus(x * beta) / beta
    ),
    "logaddexp": Builtin(
        "tf.math.reduce_logsumexp(tf.stack([x, y]), axis=0)",
        lambda x, y: _tf().math.reduce_logsumexp(_tf().stack([x, y]), axis=0),
    ),
    "hypot": Builtin(
        "tf.norm(tf.stack([x, y]), axis=0)", lambda x, y: _tf().norm(_tf().stack([x, y]), axis=0)
    ),
    "elu": Builtin("tf.nn.elu(x)", lambda x: _tf().nn.elu(x)),
    "selu": Builtin("tf.nn.selu(x)", lambda x: _tf().nn.selu(x)),
    "lbeta": Builtin(
        "tf.math.lbeta(tf.stack([a, b], axis=-1))",
        lambda a, b: _tf().math.lbeta(_tf().stack([a, b], axis=-1)),
    ),
    "poisson_nll": Builtin(
        "tf.nn.log_poisson_loss(k, r) + tf.math.lgamma(k + 1)",
        lambda r, k: _tf().nn.log_poisson_loss(k, r) + _tf().math.lgamma(k + 1),
        _POISSON_NOTE,
    ),
    "huber": Builtin(
        "tf.keras.losses.huber(0, x, delta)",
        lambda x, delta: _tf().keras.losses.huber(
            _tf().zeros_like(x)[..., None], x[..., None], delta=delta
        ),
    ),
}

JAX: dict[str, Builtin] = {
    "log1pexp": Builtin("jax.nn.softplus(x)", lambda x: _jnn().softplus(x)),
    "sigmoid": Builtin("jax.nn.sigmoid(x)", lambda x: _jnn().sigmoid(x)),
    "log_sigmoid": Builtin("jax.nn.log_sigmoid(x)", lambda x: _jnn().log_sigmoid(x)),
    "silu": Builtin("jax.nn.silu(x)", lambda x: _jnn().silu(x)),
    "gelu": Builtin("jax.nn.gelu(x, approximate=False)", lambda x: _jnn().gelu(x, False)),
    "xlogx": Builtin("jax.scipy.special.xlogy(x, x)", lambda x: _jsp().xlogy(x, x)),
    "xlogy": Builtin("jax.scipy.special.xlogy(x, y)", lambda x, y: _jsp().xlogy(x, y)),
    "softplus_beta": Builtin(
        "jax.nn.softplus(beta * x) / beta", lambda x, beta: _jnn().softplus(beta * x) / beta
    ),
    "logaddexp": Builtin("jnp.logaddexp(x, y)", lambda x, y: _jnp().logaddexp(x, y)),
    "hypot": Builtin("jnp.hypot(x, y)", lambda x, y: _jnp().hypot(x, y)),
    "elu": Builtin("jax.nn.elu(x)", lambda x: _jnn().elu(x)),
    "selu": Builtin("jax.nn.selu(x)", lambda x: _jnn().selu(x)),
    "logit": Builtin("jax.scipy.special.logit(p)", lambda p: _jsp().logit(p)),
    "log_ndtr": Builtin("jax.scipy.special.log_ndtr(x)", lambda x: _jsp().log_ndtr(x)),
    "sinc": Builtin("jnp.sinc(x / pi)", lambda x: _jnp().sinc(x / _jnp().pi), _SINC_NOTE),
    "lbeta": Builtin("jax.scipy.special.betaln(a, b)", lambda a, b: _jsp().betaln(a, b)),
    "student_t_logpdf": Builtin(
        "jax.scipy.stats.t.logpdf(x, nu)",
        lambda x, nu: _module("jax.scipy.stats").t.logpdf(x, nu),
    ),
}

TORCH: dict[str, Builtin] = {
    "log1pexp": Builtin("F.softplus(x)", lambda x: _tnnf().softplus(x)),
    "sigmoid": Builtin("torch.sigmoid(x)", lambda x: _torch().sigmoid(x)),
    "log_sigmoid": Builtin("F.logsigmoid(x)", lambda x: _tnnf().logsigmoid(x)),
    "silu": Builtin("F.silu(x)", lambda x: _tnnf().silu(x)),
    "gelu": Builtin("F.gelu(x)", lambda x: _tnnf().gelu(x)),
    "xlogx": Builtin("torch.xlogy(x, x)", lambda x: _torch().xlogy(x, x)),
    "xlogy": Builtin("torch.xlogy(x, y)", lambda x, y: _torch().xlogy(x, y)),
    "softplus_beta": Builtin(
        "F.softplus(x, beta=beta)", lambda x, beta: _tnnf().softplus(x, beta=beta)
    ),
    "logaddexp": Builtin("torch.logaddexp(x, y)", lambda x, y: _torch().logaddexp(x, y)),
    "hypot": Builtin("torch.hypot(x, y)", lambda x, y: _torch().hypot(x, y)),
    "elu": Builtin("F.elu(x)", lambda x: _tnnf().elu(x)),
    "selu": Builtin("F.selu(x)", lambda x: _tnnf().selu(x)),
    "huber": Builtin(
        "F.huber_loss(x, 0, delta=delta, reduction='none')",
        lambda x, delta: _tnnf().huber_loss(
            x, _torch().zeros_like(x), delta=delta, reduction="none"
        ),
    ),
    "logit": Builtin("torch.logit(p)", lambda p: _torch().logit(p)),
    "poisson_nll": Builtin(
        "F.poisson_nll_loss(r, k, reduction='none') + torch.lgamma(k + 1)",
        lambda r, k: _tnnf().poisson_nll_loss(r, k, reduction="none") + _torch().lgamma(k + 1),
        _POISSON_NOTE,
    ),
    "log_ndtr": Builtin("torch.special.log_ndtr(x)", lambda x: _torch().special.log_ndtr(x)),
    "sinc": Builtin("torch.sinc(x / pi)", lambda x: _torch().sinc(x / math.pi), _SINC_NOTE),
    "student_t_logpdf": Builtin(
        "StudentT(nu).log_prob(x)",
        lambda x, nu: _module("torch.distributions").StudentT(nu).log_prob(x),
    ),
}

BY_BACKEND = {"tf": TF, "jax": JAX, "torch": TORCH}


def tool(name: str, backend: str, params) -> dict[str, Callable]:
    """{"builtin": the framework's op on the args, params bound}, or {} where it has none."""
    builtin = BY_BACKEND[backend].get(name)
    if builtin is None:
        return {}
    bound = dict(params)
    return {"builtin": lambda *args: builtin.fn(*args, **bound)}
