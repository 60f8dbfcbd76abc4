"""Checkpoint folders: which folder or hub id a judge or a training run names, and the last checkpoint a run saved.

Used by the engines that load a model, by training (resuming) and by evaluation; imports nothing of the engines.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(?:/[A-Za-z0-9][\w.-]*)?$")


#: A folder holds a saved model (or a LoRA adapter) when it has one of these.
_SAVED_MODEL_FILES = ("config.json", "adapter_config.json")


def last_checkpoint(folder: str | os.PathLike[str]) -> Path | None:
    """The ``checkpoint-N`` folder with the largest N that a trainer saved in ``folder`` (None when there is none)."""
    found = [(int(child.name.split("-", 1)[1]), child) for child in Path(folder).glob("checkpoint-*")
             if child.is_dir() and child.name.split("-", 1)[1].isdigit()]  # fmt: skip
    return max(found)[1] if found else None


def _no_saved_model(text: str, local: Path) -> str:
    last = last_checkpoint(local)
    where = f"checkpoint folder {text!r:.200} holds no saved model (no config.json)"
    if last is None:
        return f"{where}: train it to the end first (a run saves its model there when it finishes)"
    return (f"{where}: the run there stopped before its end; its last checkpoint is {last}. Resume the run with "
            f"--resume_from_checkpoint last, or use {last} as the model")  # fmt: skip


def checkpoint_path(path: str | os.PathLike[str]) -> str:
    """``path`` when it names a checkpoint folder that exists, or a model hub id (``Qwen/Qwen3-0.6B``).

    A name that looks like a path is never sent to the hub: one that starts with ``/``, ``.`` or ``~``, has more than
    one ``/``, ends in one, or whose folder part exists here (``runs/tiny-judge`` with a ``runs`` folder). Raises
    FileNotFoundError naming it when it does not exist (instead of five retries to the hub and a message about the
    internet connection) or holds no saved model (a run stopped before its end: the message names its last
    checkpoint), and ValueError for a name that is neither.
    """
    text = os.fspath(path).strip()
    local = Path(text).expanduser()
    if local.exists():
        if not local.is_dir():
            raise FileNotFoundError(f"checkpoint {text!r:.200} is a file; give the folder it was saved to")
        if not any((local / name).is_file() for name in _SAVED_MODEL_FILES):
            raise FileNotFoundError(_no_saved_model(text, local))
        return str(local)
    parent = local.parent
    path_like = (text.startswith(("/", ".", "~", "\\")) or text.count("/") > 1 or text.endswith(("/", "\\"))
                 or (str(parent) not in ("", ".") and parent.is_dir()))  # fmt: skip
    if path_like:
        raise FileNotFoundError(f"checkpoint folder {text!r:.200} does not exist")
    if not _HUB_ID.match(text):
        raise ValueError(f"{text!r:.200} is neither a checkpoint folder nor a model hub id (ORG/NAME)")
    return text


#: Seconds a hub lookup of a model id may take before the hub counts as unreachable.
HUB_TIMEOUT_S = 3.0


def reachable_checkpoint(path: str | os.PathLike[str], hub_timeout_s: float = HUB_TIMEOUT_S) -> str:
    """:func:`checkpoint_path`, and for a hub id, that the model can be had: a copy in the local hub cache, or the
    hub answering within ``hub_timeout_s`` seconds that it holds it. For a command to call before it loads anything,
    so that a mistyped name is one line in seconds, not minutes of retries.

    Raises FileNotFoundError saying what was looked for here and on the hub: a folder that does not exist, a model
    the hub does not hold, a hub that did not answer (or is turned off with ``HF_HUB_OFFLINE``) for a model not
    cached; ValueError as :func:`checkpoint_path`."""
    text = checkpoint_path(path)
    if Path(text).is_dir():
        return text
    from huggingface_hub import constants, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(text, "config.json"), str):
        return text
    here = f"no folder {text!r:.200} here (relative to {os.getcwd()})"
    if constants.HF_HUB_OFFLINE:
        raise FileNotFoundError(f"{here}, and no copy of the hub model {text!r:.200} in the hub cache "
                                "(HF_HUB_OFFLINE is set: the hub was not asked)")  # fmt: skip
    from huggingface_hub import model_info
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        model_info(text, timeout=hub_timeout_s)
    except RepositoryNotFoundError:
        raise FileNotFoundError(f"{here}, and the hub holds no model {text!r:.200} (or it is private)") from None
    except Exception as exc:  # noqa: BLE001 - offline, DNS, TLS, a timeout: the hub cannot say
        raise FileNotFoundError(
            f"{here}, and the hub could not be asked for a model {text!r:.200} within "
            f"{hub_timeout_s:g} s ({type(exc).__name__}); no copy of it is cached"
        ) from None
    return text
