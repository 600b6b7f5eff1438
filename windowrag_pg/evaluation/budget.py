"""A token budget for the baselines that have no sentences to trim: pure, no I/O.

The chunk baselines and the no-merge sentence windows send each retrieved unit as it is. Cut to
a budget they do what such a system would: keep whole contexts in rank order while they fit and
cut the first that does not fit to the tokens left, at a token boundary of the embedder's
tokenizer (``Embedder.token_offsets``), then stop. So every row of an equal-budget comparison
sends at most the same number of tokens.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..assemble.context import AssembledContext

TokenOffsets = Callable[[str], Sequence[tuple[int, int]]]


def tokens_to_keep(token_counts: Sequence[int], budget: int | None) -> list[int]:
    """Tokens kept of each context, in rank order: all of each while they fit, the tokens left of
    the first that does not fit, then 0. Without a budget, everything."""
    if budget is None:
        return list(token_counts)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"token budget must be a positive integer, not {budget!r}")
    kept, left = [], budget
    for count in token_counts:
        take = min(count, left)
        kept.append(take)
        left -= take
    return kept


def cut_end(offsets: Sequence[tuple[int, int]], tokens: int) -> int:
    """Characters of a text kept when only its first TOKENS tokens are (OFFSETS: each token's
    character range, special tokens excluded): the end of the last kept token."""
    if tokens <= 0:
        return 0
    return offsets[min(tokens, len(offsets)) - 1][1]


def cut_contexts(contexts: Sequence[AssembledContext], *, budget: int | None,
                 token_offsets: TokenOffsets) -> list[AssembledContext]:
    """CONTEXTS (best first) within BUDGET tokens of TOKEN_OFFSETS' tokenizer.

    A cut context keeps its start; its text and citation end at the last kept token (its
    ``last_ordinal`` still names the sentence or chunk that was cut). Each context's
    ``token_count`` becomes the tokenizer's count of the text kept.
    """
    if budget is None:
        return list(contexts)
    offsets = [list(token_offsets(c.text)) for c in contexts]
    kept: list[AssembledContext] = []
    for context, its_offsets, tokens in zip(contexts, offsets, tokens_to_keep([len(o) for o in offsets], budget)):
        if tokens == len(its_offsets):
            kept.append(dataclasses.replace(context, token_count=tokens))
            continue
        if tokens == 0:
            break
        end = cut_end(its_offsets, tokens)
        citation = dataclasses.replace(context.citation, end_char=context.citation.start_char + end)
        kept.append(dataclasses.replace(context, citation=citation, text=context.text[:end], token_count=tokens))
    return kept
