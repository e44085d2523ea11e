"""attention_core.tiny.optim: Adam built and stepped without importing torch._dynamo, the same numbers bit for bit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from attention_core.tiny import optim

ROOT = Path(__file__).resolve().parents[2]


def _train(step) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    opt = optim.adam(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    for _ in range(25):
        x = torch.randn(8, 6, generator=gen)
        loss = model(x).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        step(opt)
    return [p.detach().clone() for p in model.parameters()] + [s["exp_avg_sq"].clone() for s in opt.state.values()]


def test_the_light_step_is_torchs_step_bit_for_bit():
    ours, torchs = _train(optim.step), _train(lambda opt: opt.step())
    assert len(ours) == len(torchs)
    for a, b in zip(ours, torchs):
        assert torch.equal(a, b)


def test_a_hook_falls_back_to_torchs_own_step():
    model = torch.nn.Linear(2, 1)
    opt = optim.adam(model.parameters(), lr=0.1)
    calls = []
    handle = opt.register_step_post_hook(lambda *_: calls.append(1))
    model(torch.ones(1, 2)).sum().backward()
    optim.step(opt)
    handle.remove()
    assert calls == [1]


def test_training_imports_no_dynamo():
    code = ("import sys\nfrom attention_core.tiny.config import TrainConfig\n"
            "from attention_core.tiny.training import ReversalTrainer\n"
            "t = ReversalTrainer(TrainConfig(steps=3, train_size=64, test_size=16, train_eval_size=8))\n"
            "t.run(lambda r: None)\n"
            "print(sorted(m for m in ('torch._dynamo', 'sympy', 'torch._inductor') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr[-2000:])
