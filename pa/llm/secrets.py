"""Secret-looking values are removed from everything the LLM stage sends, whatever the other settings.

Profiles carry the job's environment and command lines (Nsight Systems' StringIds and
TARGET_INFO_SYSTEM_ENV, rocpd's process `command` and `environment`): PMI_SHARED_SECRET, API
tokens, passwords in URLs. The SQL tool does not expose those tables by default, but a secret can
still reach a string pa reads (a kernel launched from a script named by its token, a marker text
that logs a URL). So every request body is scrubbed by the transport (pa.llm.transport), and
the prompt of the `claude` command-line client likewise, with the patterns below:

- `NAME=value` / `NAME: value` where NAME contains SECRET, TOKEN, PASSWORD, PASSWD, API_KEY,
  ACCESS_KEY, PRIVATE_KEY, SESSION_KEY or CREDENTIAL (so `PMI_SHARED_SECRET=…`, `HF_TOKEN=…`);
- command-line options `--password x`, `--token=x`, `--api-key x`, `--secret x`;
- well-known key formats: `sk-…` (OpenAI, Anthropic), `AIza…` (Google), `AKIA…` (AWS access key
  ids), `ghp_…`/`github_pat_…` (GitHub), `xox?-…` (Slack), `hf_…` (Hugging Face), JSON Web Tokens,
  `Bearer …`, PEM private-key blocks;
- credentials in URLs (`scheme://user:password@host`);
- the literal values of every provider key variable in the environment.

A value is replaced by `[secret removed by pa]`; the name before it stays, so the model still sees
that, say, PMI_SHARED_SECRET was set. The patterns never match inside JSON syntax (values stop at
quotes and backslashes), so a scrubbed request body stays valid JSON.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

REPLACEMENT = "[secret removed by pa]"
_SECRET_WORDS = r"(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SESSION_?KEY|CREDENTIALS?)"
_VALUE = r"[^\s\"'\\;,&<>]+"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
     REPLACEMENT),
    (re.compile(rf"(?i)(\b[A-Z0-9_.-]*{_SECRET_WORDS}[A-Z0-9_.-]*\s*[=:]\s*){_VALUE}"), rf"\g<1>{REPLACEMENT}"),
    (re.compile(r"(?i)(--?(?:password|passwd|token|secret|api[-_]?key|access[-_]?key|auth)(?:=|\s+))" + _VALUE),
     rf"\g<1>{REPLACEMENT}"),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"), rf"\g<1>{REPLACEMENT}"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^\s/@\"'\\:]+:[^\s/@\"'\\]+@"), rf"\g<1>{REPLACEMENT}@"),
    (re.compile(r"\b(?:sk-(?:ant-)?[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|AKIA[0-9A-Z]{16}|"
                r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|"
                r"hf_[A-Za-z0-9]{30,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), REPLACEMENT),
)
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def env_secrets(env: dict[str, str] | None = None) -> list[str]:
    """The literal provider keys of the environment (scrubbed from bodies wherever they appear)."""
    env = dict(os.environ) if env is None else env
    return [env[k] for k in KEY_VARIABLES if len(env.get(k, "")) >= 8]


def scrub(text: str, literals: Iterable[str] | None = None) -> str:
    """`text` with every secret-looking value (module docs) and every literal replaced.

    Without `literals`, the provider keys of the environment are the literals: a key that matches no
    secret pattern, echoed back by a server ("Incorrect API key provided: ..."), is still removed.
    """
    for lit in (env_secrets() if literals is None else literals):
        if lit and lit in text:
            text = text.replace(lit, REPLACEMENT)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text
