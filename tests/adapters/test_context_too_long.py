"""A request longer than the model's context, as each provider refuses it, is marked
`context_too_long` (adapters/_providers/_failures.py): the core may compact and call once more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolreel.adapters import codec_for
from toolreel.adapters._providers._failures import too_long

TRAFFIC = Path(__file__).parents[1] / "conformance" / "traffic"

#: The providers' own error bodies for a request past the context (their documented shapes,
#: as users reported them verbatim in the providers' and SDKs' trackers).
TOO_LONG_BODIES = {
    "openai": {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your "
            "messages resulted in 8227 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "openai-responses": {
        "error": {
            "message": "Your input exceeds the context window of this model. "
            "Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 209353 tokens > 199999 maximum",
        },
        "request_id": "req_011CWAgPbMohjStFaYrkLZCm",
    },
    "gemini": {
        "error": {
            "code": 400,
            "message": "The input token count (1200293) exceeds the maximum number of "
            "tokens allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    },
}


@pytest.mark.parametrize("provider", sorted(TOO_LONG_BODIES))
def test_each_providers_context_length_error_is_marked_too_long(provider: str) -> None:
    body = json.dumps(TOO_LONG_BODIES[provider]).encode()
    failure = codec_for(provider).decode_error(400, {}, body)
    assert failure.context_too_long
    assert not failure.retryable
    assert failure.status == 400


@pytest.mark.parametrize(
    ("provider", "case"),
    [
        ("anthropic", "anthropic_error_400_invalid_request"),
        ("anthropic", "anthropic_error_404_not_found"),
        ("gemini", "gemini_error_404_model_not_found"),
        ("gemini", "gemini_error_429_resource_exhausted"),
        ("openai", "openai_chat_error_400_invalid_request"),
        ("openai", "openai_chat_error_400_unsupported_parameter"),
    ],
)
def test_other_recorded_errors_are_not(provider: str, case: str) -> None:
    recorded = json.loads((TRAFFIC / f"{case}.json").read_text(encoding="utf-8"))
    status = int(case.split("_error_")[1][:3])  # some files are the bare body
    response = recorded.get("response", {"status": status, "headers": {}, "body": recorded})
    body = json.dumps(response["body"]).encode()
    failure = codec_for(provider).decode_error(response["status"], response["headers"], body)
    assert not failure.context_too_long


@pytest.mark.parametrize(
    "message",
    [
        "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000",
        "This model's maximum context length is 4096 tokens. However, you requested 4222",
        "prompt is too long: 191989 tokens > 180000 maximum",
    ],
)
def test_the_wordings_servers_share_are_known(message: str) -> None:
    assert too_long(message)


def test_a_retryable_failure_is_never_too_long() -> None:
    body = json.dumps(TOO_LONG_BODIES["openai"]).encode()
    assert not codec_for("openai").decode_error(503, {}, body).context_too_long
