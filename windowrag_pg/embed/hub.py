"""Where a Hugging Face model name points, checked before the optional backends load it.

Without network the hub client retries for a minute or more before it fails (a mistyped
`--embedder` took 79 s here), and a local folder that does not exist is first tried as a hub
name. So a model that is neither a folder on disk nor in the Hugging Face cache is looked up
only when its host answers within a few seconds; otherwise the error says so at once.
"""
from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

REACH_TIMEOUT_SECONDS = 3.0


def looks_like_path(name: str) -> bool:
    """A local path rather than a hub id ("org/name" or "name")."""
    return name.startswith(("/", ".", "~", "\\")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)


def in_hub_cache(name: str) -> bool:
    """Whether NAME (or sentence-transformers/NAME, as sentence-transformers reads a bare name)
    is in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for repo_id in (name, f"sentence-transformers/{name}"):
        try:
            if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
                return True
        except Exception:  # an id the hub client refuses (bad characters): not cached
            continue
    return False


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_model_source(name: str, *, error: type[Exception], what: str) -> None:
    """Raise ERROR ("could not load WHAT: ...") when model_source_problem finds one; the optional
    backends call it first in their constructors, before importing torch (~10 s)."""
    problem = model_source_problem(name)
    if problem:
        raise error(f"could not load {what}: {problem}")


def model_source_problem(name: str, *, timeout: float = REACH_TIMEOUT_SECONDS) -> str | None:
    """Why model NAME cannot be loaded, when that can be told quickly; None when it may load (a
    local folder, a cached model, or a hub whose host answers)."""
    folder = os.path.expanduser(name)
    if os.path.isdir(folder):
        # a folder without a model's config: transformers would list its ~400 model types
        if not any(os.path.isfile(os.path.join(folder, f)) for f in ("config.json", "modules.json")):
            return f"{name!r} is a folder without a model in it (no config.json or modules.json)"
        return None
    if looks_like_path(name):
        return f"no model folder at {name!r}"
    if hub_offline() or in_hub_cache(name):
        return None  # offline the hub client fails at once with its own message
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    host = urlparse(endpoint).hostname or endpoint
    port = urlparse(endpoint).port or (80 if endpoint.startswith("http:") else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return (f"{name!r} is neither a local folder nor in the Hugging Face cache, and {host} cannot be "
                f"reached to download it ({exc}); download it where there is network, or pass a local folder")
    return None
