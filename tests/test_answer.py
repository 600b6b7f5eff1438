"""Answer generation against a local imitation of an OpenAI-compatible /v1/chat/completions."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from windowrag_pg.answer import (
    Answer, AnswerConfig, AnswerError, AnswerNotConfigured, answer, extract_citations,
)
from windowrag_pg.assemble.context import AssembledContext, Citation

REPLY_TEXT = "Postgres stores vectors with pgvector [2]. It also orbits Mars [7]."


class FakeChat:
    """A ThreadingHTTPServer on 127.0.0.1 that records requests and replies per `mode`."""

    def __init__(self, mode: str = "ok", delay_s: float = 0.0):
        self.mode, self.delay_s, self.requests = mode, delay_s, []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                fake.requests.append({"method": self.command, "path": self.path,
                                      "headers": dict(self.headers), "body": json.loads(body)})
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                if fake.mode == "error":
                    self._send(500, {"error": {"message": "model crashed: out of memory",
                                               "type": "server_error"}})
                elif fake.mode == "garbage":
                    self._send(200, b"<html>not json</html>")
                elif fake.mode == "malformed":
                    self._send(200, {"choices": []})
                else:
                    self._send(200, {
                        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model-served",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": REPLY_TEXT}}],
                        "usage": {"prompt_tokens": 42, "completion_tokens": 12, "total_tokens": 54},
                    })

            def _send(self, status, payload):
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def make_contexts() -> list[AssembledContext]:
    texts = ["Postgres is a relational database.", "pgvector adds a vector type to Postgres.",
             "Sentence windows expand a hit to its neighbours."]
    contexts = []
    for i, text in enumerate(texts):
        citation = Citation(document_id=f"doc-{i}", title=f"Title {i}", section_path=("Intro", f"Part {i}"),
                            start_char=10 * i, end_char=10 * i + len(text),
                            first_ordinal=i, last_ordinal=i)
        contexts.append(AssembledContext(citation=citation, text=text, score=1.0 - i / 10,
                                         token_count=8, document_key=i))
    return contexts


def config(server: FakeChat, **kw) -> AnswerConfig:
    return AnswerConfig(base_url=server.base_url, model="fake-model", **kw)


def test_answer_sends_blocks_and_parses_citations():
    contexts = make_contexts()
    with FakeChat() as server:
        result = answer("How are vectors stored?", contexts, config=config(server, api_key="sk-test"))
    assert isinstance(result, Answer)
    assert result.text == REPLY_TEXT
    assert result.citations == [(2, contexts[1].citation)]  # [7] is out of range
    assert result.model == "fake-model-served"
    assert result.usage == {"prompt_tokens": 42, "completion_tokens": 12, "total_tokens": 54}
    assert result.raw["id"] == "chatcmpl-1" and not result.abstained

    (request,) = server.requests
    assert request["method"] == "POST" and request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["headers"]["Content-Type"] == "application/json"
    body = request["body"]
    assert body["model"] == "fake-model" and body["temperature"] == 0.0 and body["max_tokens"] == 512
    system, user = body["messages"]
    assert system["role"] == "system" and "ONLY" in system["content"] and "[n]" in system["content"]
    assert user["role"] == "user"
    content = user["content"]
    positions = [content.index(f"[{n}] Title {n - 1} [doc-{n - 1}] › Intro › Part {n - 1}")
                 for n in (1, 2, 3)]
    assert positions == sorted(positions)
    assert [content.index(c.text) for c in contexts] == sorted(content.index(c.text) for c in contexts)
    assert content.rstrip().endswith("How are vectors stored?")
    assert content.index("How are vectors stored?") > positions[-1]


def test_no_authorization_header_without_key():
    with FakeChat() as server:
        answer("q", make_contexts(), config=config(server))
    assert "Authorization" not in server.requests[0]["headers"]


def test_trailing_slash_in_base_url():
    with FakeChat() as server:
        cfg = AnswerConfig(base_url=server.base_url + "/", model="m")
        answer("q", make_contexts(), config=cfg)
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_zero_contexts_abstains_without_request():
    with FakeChat() as server:
        result = answer("Anything?", [], config=config(server))
    assert server.requests == []
    assert result.abstained and result.citations == [] and result.raw is None
    assert "no relevant context" in result.text


def test_zero_contexts_needs_no_configuration(monkeypatch):
    for name in ("WINDOWRAG_LLM_BASE_URL", "WINDOWRAG_LLM_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert answer("q", []).abstained


def test_not_configured_names_variables():
    with pytest.raises(AnswerNotConfigured) as info:
        AnswerConfig.from_env({})
    message = str(info.value)
    for name in ("WINDOWRAG_LLM_BASE_URL", "OPENAI_BASE_URL", "WINDOWRAG_LLM_MODEL"):
        assert name in message
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(AnswerNotConfigured, match="WINDOWRAG_LLM_MODEL") as info:
        AnswerConfig.from_env({"WINDOWRAG_LLM_BASE_URL": "http://localhost:8000/v1"})
    assert "WINDOWRAG_LLM_BASE_URL (" not in str(info.value)


def test_answer_without_config_uses_environment(monkeypatch):
    monkeypatch.delenv("WINDOWRAG_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("WINDOWRAG_LLM_MODEL", raising=False)
    with pytest.raises(AnswerNotConfigured):
        answer("q", make_contexts())


def test_from_env_reads_variables_and_fallbacks():
    cfg = AnswerConfig.from_env({"WINDOWRAG_LLM_BASE_URL": "http://a/v1", "WINDOWRAG_LLM_MODEL": "m",
                                 "WINDOWRAG_LLM_API_KEY": "k1", "OPENAI_API_KEY": "k2"}, timeout_s=5)
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.timeout_s) == ("http://a/v1", "m", "k1", 5)
    cfg = AnswerConfig.from_env({"OPENAI_BASE_URL": "http://b/v1", "WINDOWRAG_LLM_MODEL": "m",
                                 "OPENAI_API_KEY": "k2"})
    assert (cfg.base_url, cfg.api_key) == ("http://b/v1", "k2")
    cfg = AnswerConfig.from_env({"WINDOWRAG_LLM_BASE_URL": "http://a/v1", "WINDOWRAG_LLM_MODEL": "m"})
    assert cfg.api_key is None
    assert "k1" not in repr(AnswerConfig("http://a/v1", "m", api_key="k1"))


def test_http_error_reports_status_and_message():
    with FakeChat(mode="error") as server:
        with pytest.raises(AnswerError) as info:
            answer("q", make_contexts(), config=config(server, api_key="sk-secret"))
    message = str(info.value)
    assert "500" in message and "model crashed: out of memory" in message
    assert server.base_url in message and "sk-secret" not in message


def test_timeout_is_reported():
    with FakeChat(delay_s=2.0) as server:
        started = time.monotonic()
        with pytest.raises(AnswerError, match="timed out") as info:
            answer("q", make_contexts(), config=config(server, timeout_s=0.5))
        assert time.monotonic() - started < 1.8
    assert server.base_url in str(info.value)


@pytest.mark.parametrize("mode, fragment", [("garbage", "did not reply with JSON"),
                                            ("malformed", "malformed reply")])
def test_unusable_replies(mode, fragment):
    with FakeChat(mode=mode) as server:
        with pytest.raises(AnswerError, match=fragment):
            answer("q", make_contexts(), config=config(server))


def test_unreachable_endpoint():
    with FakeChat() as server:
        url = server.base_url
    with pytest.raises(AnswerError, match="cannot reach"):
        answer("q", make_contexts(), config=AnswerConfig(base_url=url, model="m", timeout_s=2))


def test_extract_citations_order_and_groups():
    contexts = make_contexts()
    found = extract_citations("a [3] b [1, 2] c [3] d [0] e [10]", contexts)
    assert found == [(3, contexts[2].citation), (1, contexts[0].citation), (2, contexts[1].citation)]
