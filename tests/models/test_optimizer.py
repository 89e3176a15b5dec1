"""xamm's Adam is torch's Adam bit for bit, and training never loads torch's compiler."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="the models extra (torch) is not installed")

from xamm_models import optimizer  # noqa: E402


def _train(make, steps: int = 40, **kw):
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    head = list(net[2].parameters())
    groups = [{"params": list(net[0].parameters())}, {"params": head, "lr": 3e-3}]
    opt = make(groups, lr=1e-2, **kw)
    x, y = torch.randn(32, 5), torch.randn(32, 2)
    for _ in range(steps):
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
    return [p.detach().clone() for p in net.parameters()], opt


@pytest.mark.parametrize("kw", [{}, {"weight_decay": 1e-4}, {"amsgrad": True, "betas": (0.8, 0.9)}])
def test_the_parameters_are_torchs_bit_for_bit(kw):
    ours, opt = _train(optimizer.adam, **kw)
    theirs, ref = _train(torch.optim.Adam, **kw)
    assert isinstance(opt, optimizer.Adam)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    # the state is torch's too, and loads back into torch's optimizer
    state = opt.state_dict()
    assert state["param_groups"] == ref.state_dict()["param_groups"]
    ref.load_state_dict(state)
    opt.load_state_dict(ref.state_dict())
    assert torch.equal(
        opt.state[opt.param_groups[0]["params"][0]]["exp_avg"], state["state"][0]["exp_avg"]
    )


def test_an_unknown_torch_release_gets_torchs_own_adam(monkeypatch):
    monkeypatch.setattr(optimizer, "KNOWN", False)
    opt = optimizer.adam([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    assert type(opt) is torch.optim.Adam


def test_training_a_model_never_imports_torchs_compiler():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from xamm_models.embedders import create_embedder\n"
        "e = create_embedder('attention', n_features=6, seed=0)\n"
        "x = np.random.default_rng(0).normal(size=(40, 6))\n"
        "e.fit(x, epochs=3)\n"
        "print('torch._dynamo' in sys.modules, 'torch' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]


def test_a_step_runs_without_torchs_profiler_wrapper():
    """torch wraps an optimizer class's ``step`` for its profiler and step hooks when the first
    instance is made, unless the class marks it done; xamm's Adam does, so its steps cost only
    their arithmetic."""
    opt = optimizer.adam([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    assert type(opt).step is optimizer.Adam.__dict__["step"]
    assert not hasattr(type(opt).step, "__wrapped__")
    ref = torch.optim.Adam([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    assert hasattr(type(ref).step, "__wrapped__")  # what the mark spares it
