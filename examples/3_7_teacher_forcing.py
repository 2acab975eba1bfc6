"""Notes 3.7: training sees every position in one forward; generation goes token by token.

A tiny GPT learns the cycle "ABCDEFGH". Training feeds the true sequence (teacher
forcing): one causal forward over [A, B, C] scores the next token at all three positions,
and those logits equal three separate forwards over [A], [A, B], [A, B, C]. Generating
cannot do that: the next token is unknown until it is sampled. The KV cache keeps the
keys and values of the tokens already seen (nothing about the future), gives the same
logits as recomputing everything, and the known prompt goes in as one prefill pass.

Run from the repository root:  python examples/3_7_teacher_forcing.py
"""
import numpy as np

import microtensor as mt
import models
import nn

TEXT = "ABCDEFGH" * 8


def train(tok, steps=150):
    """A one-layer GPT trained with teacher forcing: inputs ids[t:t+8], labels ids[t+1:t+9]."""
    mt.manual_seed(0)
    config = models.GPTConfig(
        vocab_size=tok.vocab_size, block_size=8, n_layer=1, n_head=2, n_embd=16
    )
    gpt = models.GPT(config)
    ids = np.array(tok.encode(TEXT))
    starts = np.arange(len(ids) - 8)
    inputs = np.stack([ids[s:s + 8] for s in starts])           # [N, 8]
    labels = np.stack([ids[s + 1:s + 9] for s in starts])        # [N, 8]: shifted by one
    optimizer = nn.optim.AdamW(gpt.parameters(), lr=1e-2)
    for _ in range(steps):
        _, loss = gpt(inputs, labels)                            # all positions in one forward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"trained {steps} steps with teacher forcing, final loss {loss.item():.4f}")
    return gpt.eval()


def main():
    tok = models.CharTokenizer.from_text(TEXT)
    gpt = train(tok)
    abc = np.array([tok.encode("ABC")])
    with mt.no_grad():
        together = gpt(abc)[0].numpy()[0]                        # [3, V]
        apart = np.stack([gpt(abc[:, :t + 1])[0].numpy()[0, -1] for t in range(3)])
    print("one forward over ABC vs forwards over A, AB, ABC: largest logit difference "
          f"{np.abs(together - apart).max():.2e}")
    print("predicted next tokens at the three positions:",
          tok.decode(together.argmax(axis=-1).tolist()), "(labels: BCD)")

    prompt = np.array([tok.encode("AB")])
    with mt.profile() as prof:
        out = gpt.generate(prompt, 5, top_k=1, use_cache=False)
    seen = [r.out_shape[1] for r in prof.records if r.op == "embedding" and r.module == "wte"]
    print(f"generate from 'AB' without cache: {tok.decode(out[0].tolist())!r}, "
          f"one forward per new token over {seen} tokens")
    with mt.profile() as prof:
        cached = gpt.generate(prompt, 5, top_k=1, use_cache=True)
    seen = [r.out_shape[1] for r in prof.records if r.op == "embedding" and r.module == "wte"]
    print(f"generate from 'AB' with KV cache: {tok.decode(cached[0].tolist())!r}, "
          f"prefill of the prompt in one pass, then one token each: {seen}")

    ids = np.array([tok.encode("ABCDEFGH")])
    caches = [nn.KVCache() for _ in gpt.blocks]
    with mt.no_grad():
        full = gpt(ids)[0].numpy()
        steps = [gpt(ids[:, :2], kv_caches=caches)[0].numpy()]   # prefill "AB"
        for t in range(2, 8):
            steps.append(gpt(ids[:, t:t + 1], kv_caches=caches)[0].numpy())
    print("KV-cache decoding vs full recomputation: largest logit difference "
          f"{np.abs(np.concatenate(steps, axis=1) - full).max():.2e}")


if __name__ == "__main__":
    main()
