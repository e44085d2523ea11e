"""Adam without ``torch._dynamo``: the trainer's optimiser, built and stepped without importing the compiler.

Every ``torch.optim`` optimiser (torch 2.13) imports ``torch._dynamo`` twice over although nothing is compiled:
``Optimizer.add_param_group`` (and ``zero_grad``, ``state_dict``, ``load_state_dict``) are wrapped by
``torch._disable_dynamo``, which imports ``torch._dynamo`` on the first call to build the "disabled" version of the
method; and ``step`` is wrapped by ``_use_grad_for_differentiable``, which imports it on every call for two
``graph_break()`` calls. That import (sympy, ``torch._inductor``, ``torch.fx``' symbolic shapes, ``torch.onnx``'s
trace rules) took 2.4 s of a 6 s ``train --steps 5`` on a busy 2-core machine, ~0.9 s on an idle one.

While ``torch._dynamo`` is not loaded nothing can be compiling, so "with dynamo disabled" is the method itself:

- ``adam(params, lr)`` pre-fills the cache ``_disable_dynamo`` looks up (``fn.__dynamo_disable``) with the plain
  method for those four methods, so building the optimiser imports nothing;
- ``step(optimizer)`` calls the optimiser's own ``step`` beneath its wrappers, with autograd set as the wrapper
  sets it (``defaults["differentiable"]``, False for Adam here): the same arithmetic, bit for bit
  (``tests/core/test_training.py``).

Where the wrappers are not what this expects (another torch), or once ``torch._dynamo`` is loaded (something else
compiles), or when the optimiser has step hooks, both fall back to torch's ordinary path.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable
from typing import Any

DYNAMO = "torch._dynamo"
_CACHED = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _prefill_disable_cache() -> None:
    import torch
    from torch.optim.optimizer import Optimizer

    marker = getattr(torch._compile._disable_dynamo(lambda: None), "__code__", None)  # the wrapper's code
    for name in _CACHED:
        wrapper = Optimizer.__dict__.get(name)
        plain = getattr(wrapper, "__wrapped__", None)
        if plain is None or getattr(wrapper, "__code__", None) is not marker:
            continue  # not the wrapper this module knows: leave it
        if getattr(plain, "__dynamo_disable", None) is None:
            plain.__dynamo_disable = plain  # what _disable_dynamo caches after importing torch._dynamo


def adam(params: Iterable[Any], lr: float) -> Any:
    """``torch.optim.Adam(params, lr=lr)``, built without importing ``torch._dynamo`` (see the module docstring)."""
    import torch

    if DYNAMO not in sys.modules:
        _prefill_disable_cache()
    return torch.optim.Adam(params, lr=lr)


def _has_hooks(optimizer: Any) -> bool:
    from torch.optim import optimizer as module

    return bool(getattr(optimizer, "_optimizer_step_pre_hooks", None)
                or getattr(optimizer, "_optimizer_step_post_hooks", None)
                or getattr(module, "_global_optimizer_pre_hooks", None)
                or getattr(module, "_global_optimizer_post_hooks", None))


def step(optimizer: Any) -> None:
    """``optimizer.step()``, without importing ``torch._dynamo`` where that is safe (see the module docstring)."""
    import torch

    plain = inspect.unwrap(type(optimizer).step)
    if DYNAMO in sys.modules or plain is type(optimizer).step or _has_hooks(optimizer):
        optimizer.step()
        return
    with torch.set_grad_enabled(bool(optimizer.defaults.get("differentiable", False))):
        plain(optimizer)
