"""The vocabulary: one module per direction, each docstring listing its members; a small API."""

from __future__ import annotations

import importlib
from typing import get_args

import attrs
import pytest

import toolreel.core
import toolreel.core.budget
import toolreel.core.images
from toolreel.core import AskHook, Effect, Event, HookDecided, TellHook, _effects, _events, _notices
from toolreel.core.budget import OverBudget
from toolreel.core.notices import Notice, UsageReported
from toolreel.core.outcomes import Outcome


@pytest.mark.parametrize(
    ("module", "union"),
    [(_events, Event), (_effects, Effect), (_notices, Notice)],
    ids=["events", "effects", "notices"],
)
def test_each_direction_is_one_module_whose_docstring_lists_every_member(module, union) -> None:
    members = set(get_args(union))
    assert {kind.__module__ for kind in members} == {module.__name__}
    assert [k.__name__ for k in members if f"`{k.__name__}`" not in module.__doc__] == []


def test_only_ask_hook_is_answered_and_post_tool_use_is_told() -> None:
    assert AskHook in get_args(Effect) and TellHook in get_args(Effect)
    assert "result" not in attrs.fields_dict(AskHook)  # a told result is TellHook's
    assert set(attrs.fields_dict(TellHook)) == {"call", "result"}
    assert HookDecided in get_args(Event)


INTERNAL = [
    "RULES",
    "next_step",
    "MODEL_EVENTS",
    "build_request",
    "so_far",
    "unanswered_calls",
    "Role",
    "SUBMIT_TOOL",
    "DEFAULT_FINAL_ANSWER_PROMPT",
]


@pytest.mark.parametrize("name", INTERNAL)
def test_internal_helpers_are_not_part_of_the_core_api(name) -> None:
    assert name not in toolreel.core.__all__
    assert not hasattr(toolreel.core, name)


def test_every_public_name_is_defined_and_listed_once() -> None:
    names = toolreel.core.__all__
    assert len(names) == len(set(names))
    assert [name for name in names if not hasattr(toolreel.core, name)] == []


BUDGET_NAMES = ["Budget", "BudgetPolicy", "BudgetScope", "OverBudget", "Price", "Spending"]


@pytest.mark.parametrize("name", BUDGET_NAMES)
def test_budgets_are_public_in_their_own_core_submodule(name) -> None:
    assert name in toolreel.core.budget.__all__
    assert name not in toolreel.core.__all__  # namespaced, not in the core's own surface


def test_over_budget_is_an_outcome_and_usage_reported_a_notice() -> None:
    assert OverBudget in get_args(Outcome)
    assert UsageReported in get_args(Notice)


def test_images_are_part_of_the_core_api() -> None:
    assert "ImagePart" in toolreel.core.__all__
    assert {"MEDIA_TYPES", "MAX_IMAGE_BYTES"} == set(toolreel.core.images.__all__)
    assert {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    } == toolreel.core.images.MEDIA_TYPES


APPROVAL = {
    "toolreel.core.hooks": ["Ask"],
    "toolreel.core": ["Approved", "Denied", "AwaitApproval", "awaiting_approval"],
    "toolreel.core.notices": ["ApprovalRequested"],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in APPROVAL.items() for name in names]
)
def test_the_approval_vocabulary_is_public(module, name) -> None:
    assert name in importlib.import_module(module).__all__


def test_approvals_are_events_and_pausing_is_their_effect_not_a_finish() -> None:
    assert _events.Approved in get_args(Event) and _events.Denied in get_args(Event)
    assert _effects.AwaitApproval in get_args(Effect)
    assert _effects.AwaitApproval not in get_args(_effects.Outcome)
    assert _events.Ask in get_args(_events.Decision)


@pytest.mark.parametrize(
    "name",
    [
        "AgentConfig",
        "AgentState",
        "AgentPhase",
        "AgentStepError",
        "AgentEvent",
        "AgentEffect",
        "AgentNotice",
        "FinishAgent",
        "AgentOutcome",
        "AgentOutput",
        "AgentError",
        "agent_step",
        "initial_agent_state",
        "agent_awaiting_approval",
        "DEFAULT_MAX_ITERATIONS_PER_ATTEMPT",
    ],
)
def test_there_is_one_reducer_a_structured_output_is_a_setting_of(name) -> None:
    assert not hasattr(toolreel.core, name)


def test_a_structured_output_is_produced_through_the_one_vocabulary() -> None:
    assert {_effects.Reflect, _effects.Validate} <= set(get_args(Effect))
    assert _events.ValidationFinished in get_args(Event)
    assert _effects.Produced in get_args(_effects.Outcome)
