"""Training the encoder-decoder on the built-in dates task (models/tasks/dates.py) and loading
it back (load_translator): teacher-forced batches, evaluation by exact match on held-out dates;
the loop is run.py's. References: Vaswani et al. 2017 §5; course notes 3.7 (teacher forcing:
one forward trains every target position).
"""
import numpy as np

import microtensor

from ..seq2seq import Seq2SeqTransformer
from ..tasks import dates as task
from .checkpoint import load_model, load_vocabularies
from .run import configure_optimizer

KIND = Seq2SeqTransformer.kind


def evaluate(model, pairs, src_tokenizer, tgt_tokenizer, label_smoothing=0.0, exact=True,
             batch_size=250):
    """{"loss": mean teacher-forced loss over `pairs`, "exact_match": fraction or None} (eval mode).

    exact=False skips the greedy translations (the slow part) and gives exact_match None.
    """
    model.eval()
    losses, weights = [], []
    with microtensor.no_grad():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            _, loss = model(*task.encode_batch(chunk, src_tokenizer, tgt_tokenizer),
                            label_smoothing=label_smoothing)
            losses.append(loss.item())
            weights.append(len(chunk))
        match = task.exact_match(model, pairs, src_tokenizer, tgt_tokenizer) if exact else None
    model.train()
    return {"loss": float(np.average(losses, weights=weights)), "exact_match": match}


def load_translator(out_dir, which="best"):
    """(model in eval mode, source and target tokenizers, manifest) of a `translate train` run.

    Raises FileNotFoundError when out_dir holds no checkpoint, CheckpointError (a
    ValueError naming the file) when it is broken or holds another kind of model.
    """
    model, manifest = load_model(out_dir, which, kind=KIND)
    vocabs = load_vocabularies(out_dir, model, manifest, task.Seq2SeqTokenizer,
                               src_vocab="src_vocab_size", tgt_vocab="tgt_vocab_size")
    src_tok, tgt_tok = vocabs["src_vocab"], vocabs["tgt_vocab"]
    return model, src_tok, tgt_tok, manifest


def train_translation(run, progress=True):
    """Train a Seq2SeqTransformer on the dates task as `run` (a TrainingRun of kind KIND whose
    settings, a TranslateConfig, are resolved: `run.settings(TranslateConfig, flags=...)`)
    says, with the checkpoints and rules of `microtensor train` (train.train). Each evaluation
    measures the teacher-forced loss on the first n_test training pairs and on the held-out
    pairs, and the exact match of the held-out pairs' greedy translations. Returns the last {"iter",
    "train_loss", "val_loss", "exact_match", "elapsed_s"} plus "best_val_loss". ValueError
    for settings not resolved.
    """
    config = run.resolved_settings("train_translation", "TranslateConfig, flags=...")
    microtensor.manual_seed(config.seed)
    src_tok, tgt_tok = task.source_tokenizer(), task.target_tokenizer()
    train_pairs, test_pairs = task.date_pairs(config.n_train, config.n_test, seed=config.seed)
    model = Seq2SeqTransformer(config.model_config())
    info = {"src_vocab": src_tok.chars.chars, "tgt_vocab": tgt_tok.chars.chars,
            "train_config": config.to_dict(),
            "data": {"source": "the built-in dates task (models/tasks/dates.py)"}}
    about = (f"encoder-decoder on dates in words -> ISO ({len(train_pairs):,} train / "
             f"{len(test_pairs):,} held-out pairs)")
    # one group, every parameter decayed: what --weight-decay says, and the optimizer state
    # that translate's checkpoints have always held (a resume loads it by group)
    optimizer = configure_optimizer(model, config, matrices_only=False)
    it = run.start(model, optimizer, info, about, progress)

    def get_batch():
        """(src, tgt_in, targets) of a random batch of training pairs (teacher forcing)."""
        rows = microtensor.random.generator().integers(len(train_pairs), size=config.batch_size)
        return task.encode_batch([train_pairs[i] for i in rows], src_tok, tgt_tok)

    def forward_backward(*batch):
        _, loss = model(*batch, label_smoothing=config.label_smoothing)
        loss.backward()
        return loss.item()

    def evaluate_at(it):
        val = evaluate(model, test_pairs, src_tok, tgt_tok, config.label_smoothing)
        trn = evaluate(model, train_pairs[:config.n_test], src_tok, tgt_tok,
                       config.label_smoothing, exact=False)
        run.record_evaluation(it, trn["loss"], val["loss"], exact_match=val["exact_match"],
                              shown=f", exact match {val['exact_match']:.1%}")

    return run.loop(it, get_batch, forward_backward, evaluate_at, "translate")
