"""torch's Adam, stepping without loading torch's compiler.

``torch.optim.Optimizer`` wraps ``step``, ``zero_grad``, ``add_param_group`` and the state-dict
methods so that ``torch.compile`` leaves them alone; the wrappers import ``torch._dynamo`` the first
time they run, which costs more CPU than importing torch itself, in every process that
trains a model, although nothing in xamm compiles. :class:`Adam` calls the functions under those
wrappers: in eager mode the wrappers add nothing else (``step``'s sets gradients off, as here, and
marks a graph break, which eager mode ignores), so the parameters it produces are bit for bit those
of ``torch.optim.Adam`` (``tests/models/test_optimizer.py``). Where a torch release changes the
wrappers, :func:`adam` falls back to ``torch.optim.Adam``. Its ``step`` also skips the wrapper torch
adds for its profiler and optimizer step hooks: xamm's training loops use neither, and nothing
outside them holds the optimizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["Adam", "adam"]

_OPT = torch.optim.Optimizer
_WRAPPED = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _inner(fn: Callable) -> Callable | None:
    """The function under one of torch's ``functools.wraps`` wrappers, or None."""
    return getattr(fn, "__wrapped__", None)


# each wrapper's function, or None when this torch release wraps them otherwise
_FOUND = {name: _inner(getattr(_OPT, name)) for name in _WRAPPED}
_FOUND["step"] = _inner(torch.optim.Adam.step)
KNOWN = all(f is not None for f in _FOUND.values())
_RAW: dict[str, Callable[..., Any]] = {k: f for k, f in _FOUND.items() if f is not None}


class Adam(torch.optim.Adam):
    """``torch.optim.Adam`` without the compiler's wrappers (same arguments, same numbers)."""

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (``torch.optim.Optimizer.add_param_group``)."""
        _RAW["add_param_group"](self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients (``torch.optim.Optimizer.zero_grad``)."""
        _RAW["zero_grad"](self, set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state (``torch.optim.Optimizer.state_dict``)."""
        return _RAW["state_dict"](self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state (``torch.optim.Optimizer.load_state_dict``)."""
        _RAW["load_state_dict"](self, state_dict)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam step (``torch.optim.Adam.step``), gradients off as torch's wrapper sets them.

        Args:
            closure: re-evaluates the model and returns the loss (optional).
        """
        if self.defaults["differentiable"]:
            return super().step(closure)
        with torch.no_grad():
            return _RAW["step"](self, closure)

    # torch's Optimizer.__init__ wraps a class's ``step`` once, for its profiler and its step
    # hooks, unless the class marks it ``hooked``: xamm trains with neither, and on the small
    # models it trains the wrapper is a share of every step
    step.hooked = True  # type: ignore[attr-defined]


def adam(params: Iterable, **kwargs: Any) -> torch.optim.Adam:
    """An Adam optimizer: :class:`Adam`, or ``torch.optim.Adam`` on a torch release whose wrappers
    this module does not know.

    Args:
        params: the parameters (or parameter groups) to optimise.
        **kwargs: ``torch.optim.Adam``'s options (``lr``, ``weight_decay``, ...).

    Returns:
        The optimizer.
    """
    if not KNOWN:
        return torch.optim.Adam(params, **kwargs)
    return Adam(params, **kwargs)
