"""Optional answer generation: ask an OpenAI-compatible chat endpoint to answer from the
assembled contexts, citing them as [n]. Standard library only (urllib); no `openai` package."""
from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from windowrag_pg.assemble.context import AssembledContext, Citation, format_context

SYSTEM_PROMPT = (
    "You answer questions using ONLY the numbered context blocks provided by the user. "
    "Cite every statement with the number of the block it comes from, as [n] (for example [1] or [2][3]). "
    "If the blocks do not contain the answer, say that the context does not contain it; "
    "do not use outside knowledge and do not invent citations."
)
ABSTAIN_TEXT = "The corpus has no relevant context for this question, so no answer was generated."

_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")  # [2], [1, 3]


class AnswerNotConfigured(RuntimeError):
    """No chat endpoint or model configured."""


class AnswerError(RuntimeError):
    """The chat endpoint failed or replied with something unusable."""


@dataclass(frozen=True)
class AnswerConfig:
    base_url: str  # e.g. http://localhost:8000/v1
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60
    temperature: float = 0.0
    max_tokens: int = 512

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> AnswerConfig:
        env = os.environ if environ is None else environ
        base_url = env.get("WINDOWRAG_LLM_BASE_URL") or env.get("OPENAI_BASE_URL")
        model = env.get("WINDOWRAG_LLM_MODEL")
        api_key = env.get("WINDOWRAG_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None
        missing = []
        if not base_url:
            missing.append("WINDOWRAG_LLM_BASE_URL (or OPENAI_BASE_URL), e.g. http://localhost:8000/v1")
        if not model:
            missing.append("WINDOWRAG_LLM_MODEL, the model name the server serves")
        if missing:
            raise AnswerNotConfigured(
                "answer generation is not configured; set " + " and ".join(missing)
                + ". WINDOWRAG_LLM_API_KEY (or OPENAI_API_KEY) is optional for local servers.")
        return cls(base_url=base_url, model=model, api_key=api_key, **overrides)

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass
class Answer:
    text: str
    citations: list[tuple[int, Citation]]  # (block number, citation), in order of first mention
    model: str | None
    usage: dict[str, Any] | None = None
    raw: dict[str, Any] | None = None  # the endpoint's JSON response; None when not called

    @property
    def abstained(self) -> bool:
        return self.raw is None


def build_messages(question: str, contexts: Sequence[AssembledContext]) -> list[dict[str, str]]:
    user = f"Context blocks:\n\n{format_context(contexts)}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def extract_citations(text: str, contexts: Sequence[AssembledContext]) -> list[tuple[int, Citation]]:
    """The [n] markers in TEXT that name existing blocks (1..len), once each, in order of first use."""
    seen: list[int] = []
    for match in _CITATION.finditer(text):
        for number in (int(n) for n in match.group(1).split(",")):
            if 1 <= number <= len(contexts) and number not in seen:
                seen.append(number)
    return [(n, contexts[n - 1].citation) for n in seen]


def answer(question: str, contexts: Sequence[AssembledContext], *,
           config: AnswerConfig | None = None) -> Answer:
    """Answer QUESTION from CONTEXTS through the configured chat endpoint (abstains without contexts)."""
    if not contexts:
        return Answer(text=ABSTAIN_TEXT, citations=[], model=config.model if config else None)
    config = config or AnswerConfig.from_env()
    body = {"model": config.model, "messages": build_messages(question, contexts),
            "temperature": config.temperature, "max_tokens": config.max_tokens}
    raw = _post_json(config, body)
    try:
        text = raw["choices"][0]["message"]["content"]
        if not isinstance(text, str):
            raise TypeError(f"content is {type(text).__name__}")
    except (KeyError, IndexError, TypeError) as exc:
        raise AnswerError(f"malformed reply from {config.endpoint}: no choices[0].message.content "
                          f"({exc!r})") from None
    usage = raw.get("usage")
    return Answer(text=text.strip(), citations=extract_citations(text, contexts),
                  model=raw.get("model") or config.model,
                  usage=usage if isinstance(usage, dict) else None, raw=raw)


def _post_json(config: AnswerConfig, body: dict[str, Any]) -> dict[str, Any]:
    url = config.endpoint
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=config.timeout_s) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        raise AnswerError(f"{url} returned HTTP {exc.code}: {_error_message(exc)}") from None
    except TimeoutError:
        raise AnswerError(f"{url} timed out after {config.timeout_s} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise AnswerError(f"{url} timed out after {config.timeout_s} s") from None
        raise AnswerError(f"cannot reach {url}: {exc.reason}") from None
    except OSError as exc:
        raise AnswerError(f"cannot reach {url}: {exc}") from None
    try:
        raw = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise AnswerError(f"{url} did not reply with JSON: {payload[:200]!r}") from None
    if not isinstance(raw, dict):
        raise AnswerError(f"malformed reply from {url}: expected a JSON object")
    return raw


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The server's own error message ({"error": {"message": ...}}, {"error": ...}, {"detail": ...})."""
    try:
        text = exc.read().decode("utf-8", "replace")
    except OSError:
        text = ""
    try:
        data = json.loads(text)
        error = data.get("error", data.get("detail")) if isinstance(data, dict) else None
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)
    except json.JSONDecodeError:
        pass
    return text.strip()[:500] or exc.reason or "no error message"
