"""The vocabulary shortlist from Python: ModelWriter.from_model + set_shortlist
write it, Model.shortlist describes it, Translator(shortlist=...) uses it or
not; a shortlist of every id changes nothing; a sentence translates the same
alone and in a batch; every token is one of its sentence's candidates."""

import random

import pytest

import libmt


def shortlisted(model, k, frequent, seed):
    """The model again, with `k` random target ids per source id (every id when k >= V)."""
    config = model.config
    rng = random.Random(seed)
    ids = list(range(config.target_vocab_size))
    rows = [ids if k >= len(ids) else rng.sample(ids, k) for _ in range(config.source_vocab_size)]
    frequent_ids = rng.sample(ids, frequent)
    writer = libmt.ModelWriter.from_model(model)
    writer.set_shortlist(rows, frequent_ids, method="test k=%d" % k)
    return libmt.Model(writer.serialize()), rows, frequent_ids


def test_shortlist_is_described(de_model):
    assert de_model.shortlist is None
    model, rows, _ = shortlisted(de_model, 5, 7, 1)
    assert model.shortlist == {"targets": sum(len(set(r)) for r in rows), "longest_row": 5, "frequent": 7,
                               "method": "test k=5"}
    assert libmt.Translator(model).shortlist is True
    assert libmt.Translator(model, shortlist=False).shortlist is False
    assert libmt.Translator(de_model).shortlist is False  # nothing to use
    # Rewritten without it.
    writer = libmt.ModelWriter.from_model(model)
    writer.set_shortlist(None)
    assert libmt.Model(writer.serialize()).shortlist is None


@pytest.mark.parametrize("beam", [1, 4])
def test_a_shortlist_of_every_id_changes_nothing(de_model, sentences, beam):
    full, _, _ = shortlisted(de_model, 1 << 20, 0, 2)
    plain = libmt.Translator(de_model).translate(sentences[:12], beam_size=beam, return_scores=True)
    listed = libmt.Translator(full).translate(sentences[:12], beam_size=beam, return_scores=True)
    assert [(r.ids, r.token_log_probs) for r in listed] == [(r.ids, r.token_log_probs) for r in plain]


@pytest.mark.parametrize("beam", [1, 4])
def test_alone_or_batched_and_only_candidates(de_model, sentences, beam):
    model, rows, frequent = shortlisted(de_model, 40, 60, 3)
    listed = libmt.Translator(model, max_batch_size=8)
    batched = listed.translate(sentences[:8], beam_size=beam, return_scores=True)
    alone = [listed.translate([s], beam_size=beam, return_scores=True)[0] for s in sentences[:8]]
    assert [(r.ids, r.token_log_probs) for r in batched] == [(r.ids, r.token_log_probs) for r in alone]
    eos = de_model.config.eos_id
    whole = libmt.Translator(model, shortlist=False).translate(sentences[:8], beam_size=beam, return_scores=True)
    assert whole != batched  # 40 ids a row of 8,000: the shortlist did restrict
    for sentence, result in zip(sentences[:8], batched):
        candidates = {eos} | set(frequent) | {t for s in de_model.vocabulary.encode(sentence) + [eos] for t in rows[s]}
        assert all(t in candidates for hypothesis in result.ids for t in hypothesis)


def test_shortlist_off_is_the_model_without_one(de_model, sentences):
    model, _, _ = shortlisted(de_model, 3, 3, 4)
    off = libmt.Translator(model, shortlist=False).translate(sentences[:10], beam_size=4, return_scores=True)
    plain = libmt.Translator(de_model).translate(sentences[:10], beam_size=4, return_scores=True)
    assert [(r.ids, r.token_log_probs) for r in off] == [(r.ids, r.token_log_probs) for r in plain]


def test_a_bad_shortlist_is_refused(de_model):
    writer = libmt.ModelWriter.from_model(de_model)
    rows = [[1, 2]] * de_model.config.source_vocab_size
    writer.set_shortlist(rows[:-1], [])
    with pytest.raises(ValueError, match="rows for 8000 source ids"):
        writer.serialize()
    writer.set_shortlist(rows, [de_model.config.target_vocab_size])
    with pytest.raises(ValueError, match="outside"):
        writer.serialize()
    with pytest.raises(TypeError):
        writer.set_shortlist(["not ids"] * 3, [])
