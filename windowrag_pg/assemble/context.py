"""Context assembly: order, token budget, citations and the prompt block format. Pure: no I/O."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

ORDERS = ("score", "document")
# between a context's lead (a list's lead-in, a table's header row) and its run of sentences
LEAD_SEPARATOR = "\n"


@dataclass(frozen=True, slots=True)
class SentenceInfo:
    """One stored sentence, as assembly needs it."""

    ordinal: int
    start_char: int
    end_char: int
    token_count: int
    section_id: int
    page: int | None = None
    section_path: tuple[str, ...] | None = None  # its section's headings, when read


def shared_heading_path(paths: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The headings shared by the sections of a run (the path of its one section when it has one):
    how a context that runs over sections (clamp 'document') is cited, as windowrag.shared_heading_path
    does in SQL."""
    if not paths:
        return ()
    shared = tuple(paths[0])
    for path in paths[1:]:
        depth = 0
        while depth < min(len(shared), len(path)) and shared[depth] == path[depth]:
            depth += 1
        shared = shared[:depth]
    return shared


def run_section_path(sentences: Sequence[SentenceInfo], default: tuple[str, ...]) -> tuple[str, ...]:
    """The section path of a run of SENTENCES: DEFAULT (the path its window was cited with) unless
    every sentence carries its section's path."""
    if any(s.section_path is None for s in sentences):
        return default
    return shared_heading_path([s.section_path for s in sentences])


@dataclass(frozen=True, slots=True)
class Citation:
    document_id: str  # external id
    title: str | None
    section_path: tuple[str, ...]
    start_char: int
    end_char: int
    first_ordinal: int
    last_ordinal: int
    pages: tuple[int, ...] = ()
    # the sentence sent in front of the run, when it starts inside a list or table: the list's
    # lead-in or the table's header row (segment/values.py Lead)
    lead_start_char: int | None = None
    lead_end_char: int | None = None

    def label(self) -> str:
        path = list(self.section_path)
        # a Markdown page's H1 is usually its title: "Handbook [h.md] › Benefits", not "… › Handbook › Benefits"
        if path and self.title and " ".join(path[0].split()).casefold() == " ".join(self.title.split()).casefold():
            path = path[1:]
        where = " › ".join(path)
        pages = f", p. {'-'.join(dict.fromkeys(str(p) for p in (self.pages[0], self.pages[-1])))}" if self.pages else ""
        # a title that is the id again (JSON lines whose title is the file's path) is said once
        title = f"{self.title} " if self.title and self.title.strip() != self.document_id else ""
        lead = f"{self.lead_start_char}–{self.lead_end_char} + " if self.lead_start_char is not None else ""
        return (f"{title}[{self.document_id}]{' › ' + where if where else ''}, "
                f"chars {lead}{self.start_char}–{self.end_char}{pages}")


@dataclass(slots=True)
class AssembledContext:
    """A context to send: a contiguous run of sentences of one document, with its citation.
    ``text`` is what to send: the run's characters, after its ``lead`` when it has one (the
    citation's lead span: a list's lead-in, a table's header row)."""

    citation: Citation
    text: str
    score: float
    token_count: int
    document_key: int
    sentences: list[SentenceInfo] = field(default_factory=list)
    hits: list[dict[str, Any]] = field(default_factory=list)
    lead: str = ""  # the start of text: the citation's lead span and LEAD_SEPARATOR, when it has one

    # the key names of `windowrag query --json`, shared with Retriever contexts
    def as_dict(self) -> dict[str, Any]:
        c = self.citation
        return {
            "document_id": c.document_id, "title": c.title, "section_path": list(c.section_path),
            "start_char": c.start_char, "end_char": c.end_char, "text": self.text, "score": self.score,
            "hits": self.hits, "token_count": self.token_count, "lead": self.lead,
            "citation": {**asdict(c), "section_path": list(c.section_path), "pages": list(c.pages)},
        }


def order_contexts(contexts: Sequence[AssembledContext], *, order: str = "score") -> list[AssembledContext]:
    """By score (best first) or by position (document, then character offset)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if order == "score":
        return sorted(contexts, key=lambda c: -c.score)
    return sorted(contexts, key=lambda c: (c.citation.document_id, c.citation.start_char))


def fit_sentences(sentences: Sequence[SentenceInfo], *, budget: int, anchors: set[int]) -> tuple[int, int] | None:
    """The longest run of whole sentences within BUDGET tokens, grown outwards from the best anchor.

    Returns (first index, last index) into SENTENCES, or None when not even the anchor fits.
    Anchors are the ordinals of retrieved sentences; without one the run starts at the middle.
    """
    if not sentences:
        return None
    positions = [i for i, s in enumerate(sentences) if s.ordinal in anchors] or [len(sentences) // 2]
    best: tuple[int, int] | None = None
    best_key = (-1, 0)
    for seed in positions:
        lo = hi = seed
        used = sentences[seed].token_count
        if used > budget:
            continue
        grew = True
        while grew:
            grew = False
            # grow towards the side whose next sentence is cheaper: more sentences per token
            options = []
            if lo > 0 and used + sentences[lo - 1].token_count <= budget:
                options.append((sentences[lo - 1].token_count, "left"))
            if hi < len(sentences) - 1 and used + sentences[hi + 1].token_count <= budget:
                options.append((sentences[hi + 1].token_count, "right"))
            if options:
                _, side = min(options)
                if side == "left":
                    lo -= 1
                    used += sentences[lo].token_count
                else:
                    hi += 1
                    used += sentences[hi].token_count
                grew = True
        anchored = sum(1 for s in sentences[lo:hi + 1] if s.ordinal in anchors)
        key = (anchored, hi - lo)
        if key > best_key:
            best, best_key = (lo, hi), key
    return best


def apply_token_budget(contexts: Sequence[AssembledContext], *, budget: int | None,
                       trim) -> list[AssembledContext]:
    """Keep contexts in the given order while they fit; trim the first that does not fit to whole
    sentences (``trim(context, remaining) -> context | None``), then stop.

    Token counts are the embedding tokenizer's counts of each sentence, summed.
    """
    if budget is None:
        return list(contexts)
    if budget <= 0:
        raise ValueError(f"token budget must be positive, not {budget}")
    kept: list[AssembledContext] = []
    remaining = budget
    for context in contexts:
        if context.token_count <= remaining:
            kept.append(context)
            remaining -= context.token_count
            continue
        trimmed = trim(context, remaining)
        if trimmed is not None:
            kept.append(trimmed)
            remaining -= trimmed.token_count
        if remaining <= 0:
            break
    return kept


def fit_token_budget(contexts: Sequence[AssembledContext], *, budget: int,
                     count_tokens: Callable[[Sequence[str]], list[int]]) -> list[AssembledContext]:
    """CONTEXTS (text filled) held to BUDGET tokens of their whole text, counted by COUNT_TOKENS.

    A context also carries the text between its sentences, which in Markdown can be a table's
    |---| row, a code fence or list markers (a handbook page: 688 tokens counted, 1,274 sent for
    a budget of 700, when the selection counted sentences alone). Budget-first selection counts
    those gaps since migration 0028; this check still holds the fixed windows and any count of a
    whole text that differs from its parts. Each context's token_count becomes the count of its
    text; while the total is over, the least valuable context (the later one on a tie) loses its
    last sentence, or goes when it has one left. Plain text, whose gaps are whitespace, is never
    cut here.
    """
    kept = list(contexts)
    tokens = count_tokens([c.text for c in kept]) if kept else []
    for context, count in zip(kept, tokens):
        context.token_count = count
    while kept and sum(tokens) > budget:
        worst = min(range(len(kept)), key=lambda i: (kept[i].score, -i))
        context = kept[worst]
        if len(context.sentences) <= 1:
            del kept[worst], tokens[worst]
            continue
        context.sentences = context.sentences[:-1]
        last = context.sentences[-1]
        context.text = context.text[: len(context.lead) + last.end_char - context.citation.start_char]
        context.citation = replace(context.citation, end_char=last.end_char, last_ordinal=last.ordinal,
                                   pages=tuple(sorted({s.page for s in context.sentences if s.page is not None})))
        context.hits = [h for h in context.hits if h.get("sentence_ordinal", -1) <= last.ordinal]
        context.token_count = tokens[worst] = count_tokens([context.text])[0]
    return kept


def format_context(contexts: Sequence[AssembledContext]) -> str:
    """Numbered, cited blocks for a prompt:

        [1] Title [doc-id] › Section › Sub, chars 120–480
        text…
    """
    blocks = []
    for number, context in enumerate(contexts, start=1):
        blocks.append(f"[{number}] {context.citation.label()}\n{context.text.strip()}")
    return "\n\n".join(blocks)
