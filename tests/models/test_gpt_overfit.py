"""A small GPT memorises one batch: the whole forward/backward/AdamW path learns."""
import numpy as np

import microtensor
import nn
from models import GPT, GPTConfig


def test_overfits_one_batch():
    microtensor.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=12, block_size=16, n_layer=2, n_head=2, n_embd=32))
    batch = np.random.default_rng(1).integers(0, 12, size=(4, 17))
    x, y = batch[:, :-1], batch[:, 1:]                      # [4, 16] each
    optimizer = nn.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    losses = []
    for _ in range(300):
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if losses[-1] < 0.05:
            break
    assert losses[0] > 2.0
    assert losses[-1] < 0.1, f"loss only fell to {losses[-1]:.3f} in {len(losses)} steps"
