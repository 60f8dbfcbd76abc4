"""Reward-server settings: defaults, then a YAML file, then ``GENRM_*`` environment variables, then the command line.

    genrm serve --config serve.yaml --port 8000          # YAML keys are the field names below
    GENRM_API_KEY=secret genrm serve --host 0.0.0.0      # binding beyond loopback requires an API key

Every field is validated; an unknown key in the YAML file or a value out of range is an error that names it.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, InstanceOf, PlainSerializer, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from genrm.choices import Device, Dtype
from genrm.engine import EngineOptions, JudgeSpec, SamplingSettings
from genrm.engine.backends import DEFAULT_BACKEND, backend, spec_forms
from genrm.engine.images import DEFAULT_IMAGE_BUDGET
from genrm.methods.config import MethodConfig
from genrm.methods.settings import RewardSettings
from genrm.settings_model import refuse_removed_variables
from serving.images import ImagePolicy
from serving.launcher import LAUNCHES, SGLangLaunch, VLLMLaunch
from verifiers import VerifyConfig

#: The engine's own defaults, which the judge settings take (declared once, in genrm.engine.spec.EngineOptions).
_ENGINE = EngineOptions()
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def _judge_value(value: Any) -> Any:
    # the spec is read from its one string once, here; a JudgeSpec given in code is taken as it is
    return JudgeSpec.parse(value) if isinstance(value, str) else value


#: The judge as settings hold it: a :class:`genrm.engine.JudgeSpec`, read from its string (YAML, GENRM_JUDGE,
#: --judge) and written back as it (model_dump).
JudgeField = Annotated[
    InstanceOf[JudgeSpec], NoDecode, BeforeValidator(_judge_value), PlainSerializer(str, return_type=str)
]


class ServerSettings(BaseSettings, RewardSettings):
    """Everything the reward server can be configured with (units in the field descriptions); the reward method and
    its settings are :class:`genrm.methods.settings.RewardSettings`' fields, as every entry point takes them."""

    model_config = SettingsConfigDict(env_prefix="GENRM_", extra="forbid", validate_default=True)

    host: str = Field("127.0.0.1", description="address to bind; anything but loopback requires api_key")
    port: int = Field(8000, ge=0, le=65535, description="TCP port (0 picks a free one)")
    api_key: SecretStr | None = Field(None, description="bearer token required on every endpoint but /health")
    judge: JudgeField = Field(
        default_factory=JudgeSpec,
        description=f"the judge in one spelling: {spec_forms()}; or spell it out with backend, "
        "model_path (a checkpoint; with launch, the one launched), judge_model and judge_urls",
    )
    backend: str = Field(DEFAULT_BACKEND, description="the judge backend (genrm.engine.backends)")
    check_format: bool = Field(True, description="apply the format mask (repetition loops, language mixing)")
    verifier_deadline_s: float = Field(
        2.0, gt=0.0, le=60.0, description="time limit of one verifier check, from when it starts, s"
    )
    verifier_budget_s: float = Field(
        30.0, gt=0.0, le=600.0,
        description="longest a request's expression checks wait for a free worker, all together, s; a check that "
        "gets none is reported busy (null reward, 503 on /v1/verify and /get_reward), never scored",
    )  # fmt: skip
    max_body_bytes: int = Field(32 * 2**20, gt=0, description="largest request body, bytes")
    max_groups: int = Field(256, gt=0, description="most groups (prompts) in one /v1/score request")
    max_responses: int = Field(64, gt=0, description="most responses in one group")
    max_response_chars: int = Field(100_000, gt=0, description="longest response, characters")
    max_concurrent_groups: int = Field(64, gt=0, description="groups judged at the same time, all requests together")
    score_workers: int = Field(
        2, ge=0, le=64,
        description="rule judge: worker processes that score /v1/score requests larger than a few ms of work, one "
        "request each at a time, so that they never slow a cheap request (0: every request in the server's process)",
    )  # fmt: skip
    score_timeout_s: float = Field(
        60.0, gt=0.0, le=3600.0,
        description="most seconds a request scored in a worker process may take; past it the worker is stopped and "
        "the request refused (503), with no reward",
    )  # fmt: skip
    score_light_bytes: int = Field(
        256 * 2**10, ge=0,
        description="a /v1/score request scored in a worker whose body is at most this many bytes goes to the light "
        "lane (its own worker), where it never waits behind a larger request",
    )  # fmt: skip
    score_light_slice_s: float = Field(
        0.5, gt=0.0, le=600.0,
        description="most seconds a request holds the light lane; past it the request is scored again from the start "
        "among the larger ones",
    )  # fmt: skip
    score_worker_memory_mb: int = Field(
        1024, ge=128, le=1_048_576,
        description="most memory scoring one request may add to its worker process, MiB; more: 413, with no reward",
    )  # fmt: skip
    special_tokens: list[str] = Field(
        default_factory=list,
        description="/get_reward: special-token texts of the policy to cut from the end of a response, besides "
        "any <|name|> token and the end tokens of common templates (</s>, <eos>, <end_of_turn>, ...)",
    )
    group_size: int | None = Field(
        None, gt=0,
        description="/get_reward: gather this many responses of one instance across requests and judge them as one "
        "group (OpenRLHF >= 0.10 sends one query per request; set its n_samples_per_prompt); unset: each request's "
        "queries are grouped by label id",
    )  # fmt: skip
    group_wait_s: float = Field(
        30.0, gt=0.0, le=3600.0,
        description="/get_reward with group_size: longest a response waits for the rest of its group, s; then the "
        "group is judged with what arrived and said to be partial (extra_logs group_partial)",
    )  # fmt: skip
    max_gathered_bytes: int = Field(
        256 * 2**20, gt=0,
        description="/get_reward with group_size: most bytes the groups waiting for responses or being judged hold "
        "together (instances as JSON, images included, and responses); past it a query is refused with 503 (retry)",
    )  # fmt: skip
    max_retained_bytes: int = Field(
        64 * 2**20, ge=0,
        description="/get_reward with group_size: most bytes the judged groups kept for retries hold together (with "
        "their results); past it the oldest are forgotten, and a retry of one of them is judged anew",
    )  # fmt: skip
    judge_payload_failure_reward: float | None = Field(
        None,
        description="/judge (ClaimDiff-RL's protocol): the accuracy and final reward answered for a caption the judge "
        "failed on; null (the default) answers null, which the source's verl manager cannot take: set a number "
        "only if you accept that a failure trains as that reward (judge_failed_reward says which)",
    )
    record_log: Path | None = Field(None, description="append every answered group to this JSONL file (fsynced)")
    record_log_max_bytes: int = Field(
        2**30, ge=0, description="rotate the record log before it passes this size, bytes (0: never rotate)"
    )
    record_log_keep: int = Field(10, ge=1, le=10_000, description="rotated record log files kept (LOG.1 ... LOG.N)")
    judge_urls: list[str] = Field(default_factory=list, description="OpenAI-compatible base URLs (…/v1), replicas")
    judge_model: str | None = Field(None, description="model name sent to the judge endpoint")
    judge_api_key: SecretStr | None = Field(None, description="bearer token of the judge endpoint")
    judge_max_tokens: int = Field(
        _ENGINE.sampling.max_tokens, gt=0, description="output token budget of one judgement"
    )
    judge_temperature: float = Field(_ENGINE.sampling.temperature, ge=0.0, le=2.0)
    judge_top_p: float = Field(_ENGINE.sampling.top_p, gt=0.0, le=1.0)
    judge_timeout_s: float = Field(
        _ENGINE.timeout_s, gt=0.0, description="time limit of one HTTP attempt of a judge call, s"
    )
    judge_budget_s: float = Field(
        180.0, gt=0.0,
        description="time limit of one judge call over all its attempts and backoffs, s: a judge that hangs is "
        "answered 503 within it",
    )  # fmt: skip
    judge_retries: int = Field(_ENGINE.retries, ge=0, description="retries of a judge call on time-outs, 429 and 5xx")
    judge_max_in_flight: int = Field(
        _ENGINE.max_in_flight, gt=0, description="judge calls in flight, all requests together"
    )
    constrained_decoding: bool = Field(True, description="send the rubric's JSON schema as response_format")
    launch: bool = Field(
        False,
        description=f"start the judge's inference server ({', '.join(LAUNCHES)} backend) for model_path, wait until "
        "it is healthy, and stop it on exit",
    )
    model_path: str | None = Field(None, description="judge checkpoint (directory or hub id): launch, transformers")
    engine_port: int = Field(30000, ge=1, le=65535, description="port of the launched inference server (loopback)")
    tp_size: int = Field(1, ge=1, description="tensor-parallel size of the launched inference server")
    dp_size: int = Field(1, ge=1, description="data-parallel size of the launched inference server")
    mem_fraction_static: float | None = Field(
        None, gt=0.0, lt=1.0, description="share of GPU memory the launched inference server takes (its default: none)"
    )
    context_length: int | None = Field(
        None, gt=0, description="context of the launched inference server, tokens (the model's when unset)"
    )
    engine_args: list[str] = Field(default_factory=list, description="further flags of the launched server, as given")
    engine_command: list[str] = Field(
        default_factory=list,
        description="command before the flags when the engine lives in another environment, e.g. "
        "[/opt/vllm/bin/python, -m, vllm.entrypoints.openai.api_server] (default: this interpreter)",
    )
    device: Device = Field("auto", description="transformers backend: where the model runs")
    dtype: Dtype = Field(
        "auto",
        description="weight dtype of the transformers backend (auto: bfloat16 on CUDA, float32 on CPU) and of a "
        "launched inference server (auto: the server's own choice)",
    )
    trust_remote_code: bool = Field(False, description="transformers backend: run the checkpoint's own code")
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="transformers backend: chat-template variables, e.g. enable_thinking"
    )
    prefix_cache: bool = Field(True, description="transformers backend: compute a batch's common prefix once")
    continuous_batching: bool = Field(
        True,
        description="transformers backend: decode concurrent prompts in one loop that answers leave as they end and "
        "prompts join as they arrive (false: model.generate batch by batch)",
    )
    image_dir: Path | None = Field(
        None,
        description="the folder a request's image paths are read from, by the server (relative to it, never outside "
        "it); without it a path is refused. Every judge is sent checked image bytes, never a path or a URL",
    )
    image_url_hosts: list[str] = Field(
        default_factory=list,
        description="hosts whose http(s) image URLs the server fetches (a name, or *.name for its subdomains); "
        "empty: image URLs are refused",
    )
    image_private_addresses: bool = Field(
        False,
        description="fetch image URLs from an allowed host that resolves to a private, loopback, link-local or "
        "reserved address (refused by default)",
    )
    image_fetch_timeout_s: float = Field(
        ImagePolicy.fetch_timeout_s, gt=0.0, le=300.0, description="time limit of one image URL fetch as a whole, s"
    )
    judge_image_pixels: int = Field(
        DEFAULT_IMAGE_BUDGET, ge=0, le=2**30,
        description="most pixels of an image the judge is shown: a larger one is scaled down to it, aspect ratio "
        "kept, before it is sent (1280 tokens of 28 x 28 pixels by default); 0 shows every image at its own size",
    )  # fmt: skip
    image_decode_timeout_s: float = Field(
        5.0, gt=0.0, le=300.0, description="most seconds one image may take to decode (in a worker process, stopped "
        "past it); more: 413",
    )  # fmt: skip
    image_decode_memory_mb: int = Field(
        512, ge=64, le=65_536, description="most memory one image's decoding may take, MiB; more: 413"
    )
    max_image_bytes: int = Field(ImagePolicy.max_bytes, gt=0, le=2**30, description="largest image, encoded, bytes")
    max_image_pixels: int = Field(
        ImagePolicy.max_pixels, gt=0, le=2**30, description="largest image, width x height, checked before decoding"
    )
    max_judge_calls: int = Field(
        16_384, gt=0,
        description="most judge calls one request may plan (a request's groups together, before re-asks of "
        "unreadable answers); more: 413",
    )  # fmt: skip
    max_judge_bytes: int = Field(
        512 * 2**20, gt=0,
        description="most bytes of messages and images one request may plan to send the judge (an image counts once "
        "per call that shows it); more: 413",
    )  # fmt: skip
    max_answer_ratio: float = Field(
        10.0, gt=0.0, le=10_000.0,
        description="most bytes of a /v1/score answer per byte of its request (at least 256 KiB): past it the answer "
        "holds every reward without records, and says so",
    )  # fmt: skip
    max_answer_bytes: int = Field(
        64 * 2**20, ge=256 * 2**10, description="most bytes of a /v1/score answer, whatever its request (see "
        "max_answer_ratio)",
    )  # fmt: skip
    max_batch_size: int = Field(
        _ENGINE.max_batch_size, gt=0, le=1024, description="transformers backend: most prompts in one batch"
    )
    batch_wait_ms: float = Field(
        _ENGINE.batch_wait_s * 1000, ge=0.0, le=1000.0, description="transformers backend: wait to fill a batch"
    )
    header_timeout_s: float = Field(
        10.0, gt=0.0, le=600.0,
        description="most seconds a request's head (request line and headers) may take to arrive, from the "
        "connection or the previous response; past it the connection is closed",
    )  # fmt: skip
    body_timeout_s: float = Field(
        10.0, gt=0.0, le=3600.0,
        description="most seconds a request's body may take to arrive after its head, plus 1 s per min_body_rate "
        "bytes it holds; past it: 408, and the connection is closed",
    )  # fmt: skip
    min_body_rate: float = Field(
        float(2**20), gt=0.0, description="bytes a second a large body is given time for, on top of body_timeout_s"
    )
    idle_timeout_s: int = Field(5, gt=0, le=3600, description="most seconds a keep-alive connection stays idle")
    shutdown_timeout_s: float = Field(
        1.0, gt=0.0, le=600.0,
        description="on SIGTERM or SIGINT, most seconds requests under way may take to finish; the rest are cut "
        "(their clients get no answer and retry; nothing of them is logged)",
    )  # fmt: skip
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @model_validator(mode="before")
    @classmethod
    def _no_removed_variable(cls, data: Any) -> Any:
        refuse_removed_variables(os.environ)  # the environment source reads only the fields' own names
        return data

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return backend(value).name

    @model_validator(mode="after")
    def _judge_in_one_spelling(self) -> ServerSettings:
        spelled_out = {"backend", "model_path", "judge_model", "judge_urls"} & self.model_fields_set
        if "judge" in self.model_fields_set:
            if spelled_out:
                raise ValueError(f"judge names the judge already; drop {', '.join(sorted(spelled_out))}")
            if self.launch:
                raise ValueError(f"launch needs a backend that can be launched ({', '.join(LAUNCHES)}) and a "
                                 "model_path, given apart (backend, model_path and judge_model, the name it is served "
                                 "under), not judge")  # fmt: skip
            return self
        if self.launch:
            if self.backend not in LAUNCHES or not self.model_path:
                raise ValueError(
                    f"launch needs a backend that can be launched ({', '.join(LAUNCHES)}) and a model_path"
                )
            urls, model = self.judge_urls or [f"http://127.0.0.1:{self.engine_port}/v1"], self.judge_model
            spec = JudgeSpec(self.backend, model or self.model_path, tuple(urls))
        elif backend(self.backend).model == "checkpoint":  # the one check of a judge given in parts
            spec = JudgeSpec.spelled_out(self.backend, self.model_path, (), "a model_path")
        elif backend(self.backend).model == "none":
            spec = JudgeSpec(self.backend)
        else:
            spec = JudgeSpec.spelled_out(self.backend, self.judge_model, self.judge_urls, "judge_model", "judge_urls")
        # made from the parts, not given: left out of the fields set, so that settings validated again (load) are
        # read from the parts again, not from a judge and its parts both
        object.__setattr__(self, "judge", spec)
        return self

    @model_validator(mode="after")
    def _groups_fit_the_limits(self) -> ServerSettings:
        if self.group_size is not None and self.group_size > self.max_responses:
            raise ValueError(f"group_size {self.group_size} is more than max_responses {self.max_responses}")
        return self

    @model_validator(mode="after")
    def _key_beyond_loopback(self) -> ServerSettings:
        if self.api_key is not None and not self.api_key.get_secret_value().strip():
            raise ValueError("api_key is empty: give a real key, or none at all for a loopback-only server")
        if not _is_loopback(self.host) and self.api_key is None:
            raise ValueError(f"binding to {self.host!r} needs an api_key (GENRM_API_KEY): only loopback may go open")
        return self

    def engine_launch(self) -> SGLangLaunch | VLLMLaunch:
        """How to start the judge's inference server (with ``launch``): the backend's launch with these settings."""
        if not self.launch or self.model_path is None:
            raise ValueError("these settings launch no inference server")
        launch = LAUNCHES[self.judge.backend]
        return launch(
            self.model_path, port=self.engine_port, tp_size=self.tp_size, dp_size=self.dp_size,
            mem_fraction_static=self.mem_fraction_static, context_length=self.context_length,
            dtype=None if self.dtype == "auto" else self.dtype, served_model_name=self.judge.model,
            extra_args=tuple(self.engine_args),
            **({"program": tuple(self.engine_command)} if self.engine_command else {}),
        )  # fmt: skip

    def method_config(self) -> MethodConfig:
        """The common settings of the reward method: ``exposure``, the format check and the verifiers' bounds (the
        method's own are ``method_options``)."""
        verify = VerifyConfig(deadline_s=self.verifier_deadline_s, worker_wait_s=self.verifier_budget_s)
        return MethodConfig(exposure=self.exposure, check_format=self.check_format, verify=verify)

    def image_policy(self) -> ImagePolicy:
        """What image references the server reads, and its limits, from these settings."""
        return ImagePolicy(image_dir=self.image_dir, url_hosts=tuple(self.image_url_hosts),
                           private_addresses=self.image_private_addresses, max_bytes=self.max_image_bytes,
                           max_pixels=self.max_image_pixels, fetch_timeout_s=self.image_fetch_timeout_s,
                           judge_pixels=self.judge_image_pixels or None)  # fmt: skip

    def engine_options(self) -> EngineOptions:
        """How the judge's engine behaves, from these settings."""
        return EngineOptions(
            sampling=SamplingSettings(self.judge_max_tokens, self.judge_temperature, self.judge_top_p),
            constrained=self.constrained_decoding,
            api_key=self.judge_api_key.get_secret_value() if self.judge_api_key else None,
            timeout_s=self.judge_timeout_s, budget_s=self.judge_budget_s, retries=self.judge_retries,
            max_in_flight=self.judge_max_in_flight, device=self.device, dtype=self.dtype,
            trust_remote_code=self.trust_remote_code, chat_template_kwargs=self.chat_template_kwargs,
            prefix_cache=self.prefix_cache, continuous_batching=self.continuous_batching,
            image_dir=str(self.image_dir) if self.image_dir else None, image_budget=self.judge_image_pixels or None,
            max_batch_size=self.max_batch_size, batch_wait_s=self.batch_wait_ms / 1000,
            name=self.judge.model if backend(self.judge.backend).model == "checkpoint" else None,
        )  # fmt: skip

    @classmethod
    def load(cls, config_file: str | Path | None = None, **overrides: Any) -> ServerSettings:
        """Settings from defaults < ``config_file`` (YAML) < ``GENRM_*`` environment < ``overrides`` (not None).

        Raises ValueError (pydantic's ValidationError) naming any invalid or unknown field.
        """
        overrides = {key: value for key, value in overrides.items() if value is not None}
        if config_file is None:
            return cls(**overrides)
        path = Path(config_file)
        if not path.is_file():
            raise ValueError(f"config file not found: {path}")

        class _FromYaml(cls):  # type: ignore[valid-type, misc]
            @classmethod
            def settings_customise_sources(
                cls_,
                settings_cls: type[BaseSettings],
                init_settings: PydanticBaseSettingsSource,
                env_settings: PydanticBaseSettingsSource,
                dotenv_settings: PydanticBaseSettingsSource,
                file_secret_settings: PydanticBaseSettingsSource,
            ) -> tuple[PydanticBaseSettingsSource, ...]:
                return init_settings, env_settings, YamlConfigSettingsSource(settings_cls, yaml_file=path)

        loaded = _FromYaml(**overrides)
        return cls.model_validate({name: getattr(loaded, name) for name in loaded.model_fields_set})


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
