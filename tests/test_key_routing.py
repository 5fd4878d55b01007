"""No key ever goes to a host it does not belong to (issue 14).

Two real HTTP servers on two loopback addresses stand in for two hosts: ``127.0.0.1`` (the
host LM Studio's conventional key ``LM_API_KEY`` belongs to) and ``127.0.0.2`` (a host no
provider of ours owns, standing in for api.z.ai or any other endpoint). Every way a key can be
given is tried, and each test asserts what each server received.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.agent.models.catalog import PROVIDERS, find, markdown
from hermes_tui.agent.models.keys import conventional_key_allowed, usable
from hermes_tui.agent.models.providers import ProviderError, make_provider, resolve_provider
from conftest import make_config
from fake_models import FakeModelServer

KEYS = {
    "OPENAI_API_KEY": "sk-openai-SECRET",
    "GLM_API_KEY": "glm-SECRET",
    "ANTHROPIC_API_KEY": "sk-ant-SECRET",
    "OPENROUTER_API_KEY": "sk-or-SECRET",
    "LM_API_KEY": "lm-SECRET",
}
"""Every conventional key set at once: none of them may reach a host it is not for."""


@pytest.fixture
def here() -> FakeModelServer:
    """127.0.0.1: LM Studio's host."""
    with FakeModelServer(host="127.0.0.1") as server:
        yield server


@pytest.fixture
def elsewhere() -> FakeModelServer:
    """127.0.0.2: a host no provider of ours owns."""
    with FakeModelServer(host="127.0.0.2") as server:
        yield server


def sent_keys(server: FakeModelServer) -> list[str]:
    """Every header value the server saw that carried a key."""
    return [headers[name] for headers in server.headers for name in ("authorization", "x-api-key") if name in headers]


def secrets_seen(server: FakeModelServer) -> list[str]:
    """Every secret of :data:`KEYS` (and the test's explicit ones) found anywhere in what the server received."""
    seen = json.dumps(server.headers) + json.dumps(server.requests)
    return [value for value in [*KEYS.values(), "explicit-SECRET", "token-SECRET", "header-SECRET"] if value in seen]


async def ask(settings: Any) -> str:
    """One model call through the real client; the text of the reply."""
    provider = make_provider(settings)
    pieces: list[str] = []

    async def on_text(piece: str) -> None:
        pieces.append(piece)

    try:
        await provider.complete("system", [{"role": "user", "content": "hi"}], [], on_text)
    finally:
        await provider.aclose()
    return "".join(pieces)


def resolve(yaml_text: str, home: Path, env: dict[str, str] | None = None, **flags: Any) -> Any:
    return resolve_provider(make_config(yaml_text), home, {**KEYS, **(env or {})}, **flags)


# -- conventional keys stay on their hosts --------------------------------------------------


@pytest.mark.parametrize("provider", ["zai", "openai", "openrouter", "gemini", "deepseek", "mystery-provider"])
async def test_a_provider_pointed_elsewhere_gets_no_conventional_key(
        hermes_home: Path, elsewhere: FakeModelServer, provider: str) -> None:
    elsewhere.add({"text": "ok"})
    settings = resolve(f"model:\n  provider: {provider}\n  default: m\n  base_url: {elsewhere.url}\n"
                       "  max_retries: 0\n", hermes_home)
    assert await ask(settings) == "ok"  # the request goes, without a key
    assert sent_keys(elsewhere) == [] and secrets_seen(elsewhere) == []
    assert settings.missing_key == (provider != "mystery-provider")


async def test_the_anthropic_wire_pointed_elsewhere_sends_no_x_api_key(hermes_home: Path,
                                                                      elsewhere: FakeModelServer) -> None:
    elsewhere.add({"text": "ok"})
    settings = resolve(f"model:\n  provider: anthropic\n  default: m\n  base_url: {elsewhere.url}\n"
                       "  max_retries: 0\n", hermes_home)
    assert settings.kind == "anthropic" and await ask(settings) == "ok"
    assert sent_keys(elsewhere) == [] and secrets_seen(elsewhere) == []


async def test_a_conventional_key_reaches_its_own_host_only(hermes_home: Path, here: FakeModelServer,
                                                            elsewhere: FakeModelServer) -> None:
    here.add({"text": "one"})
    elsewhere.add({"text": "two"})
    at_home = resolve(f"model:\n  provider: lmstudio\n  default: m\n  base_url: {here.url}\n", hermes_home)
    assert (at_home.api_key, at_home.key_source) == ("lm-SECRET", "LM_API_KEY in the environment")
    assert await ask(at_home) == "one"
    assert sent_keys(here) == ["Bearer lm-SECRET"]
    away = resolve(f"model:\n  provider: lmstudio\n  default: m\n  base_url: {elsewhere.url}\n", hermes_home)
    assert await ask(away) == "two"
    assert sent_keys(elsewhere) == [] and secrets_seen(elsewhere) == []


async def test_a_key_in_dotenv_follows_the_same_rule(hermes_home: Path, here: FakeModelServer,
                                                     elsewhere: FakeModelServer) -> None:
    (hermes_home / ".env").write_text("LM_API_KEY=lm-from-dotenv\nGLM_API_KEY=glm-from-dotenv\n")
    here.add({"text": "a"})
    elsewhere.add({"text": "b"})
    for server, provider in ((here, "lmstudio"), (elsewhere, "zai")):
        settings = resolve_provider(make_config(f"model:\n  provider: {provider}\n  default: m\n  base_url: {server.url}\n"),
                                    hermes_home, {})
        await ask(settings)
    assert sent_keys(here) == ["Bearer lm-from-dotenv"]
    assert sent_keys(elsewhere) == [] and "glm-from-dotenv" not in json.dumps(elsewhere.headers)


# -- keys named for a host go there ---------------------------------------------------------


@pytest.mark.parametrize("setting", [
    "model:\n  api_key: explicit-SECRET\n",
    "model:\n  api_key: ${MODEL_API_KEY}\n",
    "model:\n  key_env: MODEL_API_KEY\n",
    "model:\n  api: explicit-SECRET\n",  # Hermes Agent's other spelling
    "providers:\n  zai:\n    api_key: ${MODEL_API_KEY}\n",
    "providers:\n  zai:\n    key_env: MODEL_API_KEY\n",
    "providers:\n  zai:\n    api_key_env: MODEL_API_KEY\n",
])
async def test_a_key_named_for_the_endpoint_goes_there_and_nowhere_else(
        hermes_home: Path, here: FakeModelServer, elsewhere: FakeModelServer, setting: str) -> None:
    elsewhere.add({"text": "ok"})
    model = f"model:\n  provider: zai\n  default: glm-4.6\n  base_url: {elsewhere.url}\n"
    if setting.startswith("model:"):
        yaml_text = model + setting.removeprefix("model:\n")
    else:
        yaml_text = model + setting
    settings = resolve(yaml_text, hermes_home, {"MODEL_API_KEY": "explicit-SECRET"})
    assert await ask(settings) == "ok"
    assert sent_keys(elsewhere) == ["Bearer explicit-SECRET"]
    assert secrets_seen(elsewhere) == ["explicit-SECRET"]  # and no conventional key beside it
    assert here.requests == []


async def test_an_unset_variable_is_one_line_naming_it_and_nothing_is_sent(hermes_home: Path,
                                                                          elsewhere: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as caught:
        resolve(f"model:\n  provider: zai\n  default: m\n  base_url: {elsewhere.url}\nproviders:\n  zai:\n"
                "    api_key: ${MODEL_API_KEY}\n", hermes_home)
    assert str(caught.value) == (f"providers.zai.api_key uses ${{MODEL_API_KEY}}, which is not set: add MODEL_API_KEY "
                                 f"to the environment or {hermes_home / '.env'}")
    assert elsewhere.requests == []


async def test_a_custom_providers_entry_carries_its_key_and_headers(hermes_home: Path,
                                                                    elsewhere: FakeModelServer) -> None:
    elsewhere.add({"text": "ok"})
    settings = resolve(
        "model:\n  provider: my-box\n  default: m\ncustom_providers:\n  - name: My Box\n"
        f"    base_url: {elsewhere.url}\n    api_key: explicit-SECRET\n    extra_headers:\n"
        "      X-Team-Token: ${TEAM_TOKEN}\n    extra_body:\n      top_k: 7\n    request_timeout_seconds: 12\n",
        hermes_home, {"TEAM_TOKEN": "header-SECRET"})
    assert (settings.timeout, settings.why) == (12, "model.provider names a providers: entry")
    assert "header-SECRET" not in repr(settings) and "explicit-SECRET" not in repr(settings)
    assert await ask(settings) == "ok"
    assert elsewhere.headers[0]["x-team-token"] == "header-SECRET" and sent_keys(elsewhere) == ["Bearer explicit-SECRET"]
    assert elsewhere.requests[0]["top_k"] == 7


async def test_a_provider_flag_does_not_carry_the_model_sections_key(hermes_home: Path, here: FakeModelServer,
                                                                     elsewhere: FakeModelServer) -> None:
    """model.api_key is for the provider model.provider names; --provider picks another one."""
    elsewhere.add({"text": "ok"})
    settings = resolve(f"model:\n  provider: custom\n  default: m\n  base_url: {here.url}\n  api_key: explicit-SECRET\n",
                       hermes_home, provider="zai", base_url=elsewhere.url)
    assert await ask(settings) == "ok"
    assert sent_keys(elsewhere) == [] and here.requests == []


# -- key_cmd --------------------------------------------------------------------------------


def key_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "token.py"
    script.write_text(body)
    return f"{sys.executable} {script}"


def counting_key_script(tmp_path: Path, printed: str) -> str:
    """A key command that counts its runs in ``n`` and prints the Python expression ``printed``."""
    counter = tmp_path / "runs"
    return key_script(tmp_path, f"import json, pathlib\np = pathlib.Path({str(counter)!r})\n"
                                "n = int(p.read_text()) + 1 if p.exists() else 1\np.write_text(str(n))\n"
                                f"print({printed})\n")


async def test_key_cmd_token_is_sent_and_kept_until_it_nears_expiry(hermes_home: Path, tmp_path: Path,
                                                                    elsewhere: FakeModelServer) -> None:
    command = counting_key_script(tmp_path, "json.dumps({'access_token': f'token-SECRET-{n}', 'expires_in': 3600})")
    elsewhere.add({"text": "1"}, {"text": "2"})
    settings = resolve(f"model:\n  provider: vertexish\n  default: m\nproviders:\n  vertexish:\n"
                       f"    base_url: {elsewhere.url}\n    key_cmd: {command}\n", hermes_home)
    assert settings.key_source == "the command in providers.vertexish.key_cmd"
    provider = make_provider(settings)
    try:
        for _ in range(2):
            await provider.complete("s", [{"role": "user", "content": "hi"}], [], _ignore)
    finally:
        await provider.aclose()
    assert sent_keys(elsewhere) == ["Bearer token-SECRET-1", "Bearer token-SECRET-1"]  # the command ran once
    assert settings.key_command is not None and settings.key_command.runs == 1


async def test_key_cmd_runs_again_when_the_token_is_rejected_or_expiring(hermes_home: Path, tmp_path: Path,
                                                                       elsewhere: FakeModelServer) -> None:
    counting_key_script(tmp_path, "f'token-SECRET-{n}'")
    elsewhere.add({"status": 401, "error": "expired"}, {"text": "ok"})
    settings = resolve(f"model:\n  provider: box\n  default: m\n  max_retries: 0\nproviders:\n  box:\n"
                       f"    base_url: {elsewhere.url}\n    key_cmd: [{json.dumps(sys.executable)}, "
                       f"{json.dumps(str(tmp_path / 'token.py'))}]\n", hermes_home)
    assert await ask(settings) == "ok"
    assert sent_keys(elsewhere) == ["Bearer token-SECRET-1", "Bearer token-SECRET-2"]
    short = key_script(tmp_path, "import json\nprint(json.dumps({'access_token': 'token-SECRET', 'expires_in': 0.5}))\n")
    settings = resolve(f"model:\n  provider: box\n  default: m\nproviders:\n  box:\n    base_url: {elsewhere.url}\n"
                       f"    key_cmd: {short}\n", hermes_home)
    assert settings.key_command is not None
    await settings.key_command.token()
    await asyncio.sleep(0.6)
    await settings.key_command.token()
    assert settings.key_command.runs == 2  # an expired token is fetched again


@pytest.mark.parametrize(("body", "expected"), [
    ("import sys\nprint('token-SECRET not-a-token', file=sys.stderr)\nsys.exit(3)\n",
     "failed with exit code 3: token-SECRET not-a-token"),
    ("print('')\n", "must print one token (or JSON with access_token); it printed nothing"),
    ("print('{\"token\": \"token-SECRET\"}')\n", "printed JSON without a string access_token"),
    ("print('two words')\n", "it printed several words"),
])
async def test_key_cmd_failures_are_one_line_without_the_token(hermes_home: Path, tmp_path: Path,
                                                               elsewhere: FakeModelServer, body: str,
                                                               expected: str) -> None:
    command = key_script(tmp_path, body)
    settings = resolve(f"model:\n  provider: box\n  default: m\nproviders:\n  box:\n    base_url: {elsewhere.url}\n"
                       f"    key_cmd: {command}\n", hermes_home)
    with pytest.raises(ProviderError) as caught:
        await ask(settings)
    message = str(caught.value)
    assert expected in message and "\n" not in message and message.startswith("providers.box.key_cmd (")
    if "exit code" not in expected:
        assert "token-SECRET" not in message
    assert elsewhere.requests == []


# -- redirects and other hosts ------------------------------------------------------------


async def test_a_redirect_to_another_host_is_not_followed(hermes_home: Path, here: FakeModelServer,
                                                          elsewhere: FakeModelServer) -> None:
    here.add({"redirect": elsewhere.url + "/chat/completions"})
    elsewhere.add({"text": "stolen"})
    settings = resolve(f"model:\n  provider: lmstudio\n  default: m\n  base_url: {here.url}\n  max_retries: 0\n"
                       "  extra_headers:\n    X-Secret: header-SECRET\n", hermes_home)
    with pytest.raises(ProviderError) as caught:
        await ask(settings)
    assert elsewhere.requests == [] and secrets_seen(elsewhere) == []
    assert str(caught.value).startswith(f"lmstudio answered with a redirect to {elsewhere.url}/chat/completions "
                                        "(HTTP 307); it was not followed")


# -- fallbacks ----------------------------------------------------------------------------


async def test_a_fallback_gets_its_own_key_and_the_reply_says_who_answered(
        hermes_home: Path, here: FakeModelServer, elsewhere: FakeModelServer) -> None:
    here.add({"status": 503, "error": "overloaded"})
    elsewhere.add({"text": "from the fallback"})
    settings = resolve(f"model:\n  provider: lmstudio\n  default: local-m\n  base_url: {here.url}\n  max_retries: 0\n"
                       f"fallback_providers:\n  - provider: custom\n    model: other-m\n    base_url: {elsewhere.url}\n"
                       "    api_key: explicit-SECRET\n", hermes_home)
    provider = make_provider(settings)
    try:
        reply = await provider.complete("s", [{"role": "user", "content": "hi"}], [], _ignore)
    finally:
        await provider.aclose()
    assert reply.text == "from the fallback"
    assert reply.note == ("lmstudio · local-m could not answer (HTTP 503: overloaded); custom · other-m answered "
                          "(fallback_providers[0]).")
    assert sent_keys(here) == ["Bearer lm-SECRET"] and sent_keys(elsewhere) == ["Bearer explicit-SECRET"]
    assert secrets_seen(elsewhere) == ["explicit-SECRET"]


async def test_no_fallback_after_a_client_error_or_with_text_shown(hermes_home: Path, here: FakeModelServer,
                                                                   elsewhere: FakeModelServer) -> None:
    here.add({"status": 400, "error": "bad request"})
    settings = resolve(f"model:\n  provider: lmstudio\n  default: m\n  base_url: {here.url}\n  max_retries: 0\n"
                       f"fallback_providers:\n  - provider: custom\n    model: other\n    base_url: {elsewhere.url}\n",
                       hermes_home)
    with pytest.raises(ProviderError, match="HTTP 400"):
        await ask(settings)
    assert elsewhere.requests == []


def test_a_broken_fallback_is_left_out_and_the_model_stays(hermes_home: Path) -> None:
    settings = resolve_provider(make_config(
        "model:\n  provider: openrouter\n  default: m\nfallback_providers:\n"
        "  - provider: anthropic\n    model: claude\n    key_env: NOT_SET_ANYWHERE\n"
        "  - provider: openai-codex\n    model: gpt\n  - provider: deepseek\n    model: deepseek-chat\n"), hermes_home, {})
    assert settings is not None and settings.name == "openrouter"
    assert [f.name for f in settings.fallbacks] == ["deepseek"]
    assert settings.fallback_problems == [
        f"fallback_providers[0].key_env names NOT_SET_ANYWHERE, which is not set: add it to the environment or "
        f"{hermes_home / '.env'}; this fallback is left out",
        "fallback_providers[1]: provider 'openai-codex' signs in with a ChatGPT account (OAuth) and speaks the "
        "Responses API; use provider: openai with OPENAI_API_KEY; this fallback is left out"]


# -- non-streaming ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["custom", "anthropic"])
async def test_streaming_false_asks_for_whole_replies(hermes_home: Path, here: FakeModelServer, provider: str) -> None:
    here.add({"text": "whole reply", "tool_calls": [{"name": "execute_code", "arguments": {"code": "1"}}]})
    settings = resolve(f"model:\n  provider: {provider}\n  default: m\n  base_url: {here.url}\n  streaming: 'off'\n"
                       "  key_env: LM_API_KEY\n", hermes_home)
    replies: list[str] = []
    model = make_provider(settings)

    async def on_text(piece: str) -> None:
        replies.append(piece)

    try:
        reply = await model.complete("s", [{"role": "user", "content": "hi"}], [], on_text)
    finally:
        await model.aclose()
    assert replies == ["whole reply"] and [c.name for c in reply.calls] == ["execute_code"]
    assert here.requests[0].get("stream") in (False, None)


# -- choosing the provider ----------------------------------------------------------------


def test_auto_picks_by_the_keys_present_in_hermes_agents_order(hermes_home: Path) -> None:
    def chosen(env: dict[str, str], extra: str = "") -> tuple[str, str]:
        settings = resolve_provider(make_config(f"model:\n  provider: auto\n  default: m\n{extra}"), hermes_home, env)
        return settings.name, settings.why

    assert chosen({"DEEPSEEK_API_KEY": "sk-deep", "ANTHROPIC_API_KEY": "sk-ant"}) == (
        "anthropic", "auto: ANTHROPIC_API_KEY in the environment")
    assert chosen({"GLM_API_KEY": "changeme", "KIMI_API_KEY": "sk-kimi-1234"})[0] == "kimi-coding"  # a template value
    assert chosen({"OPENAI_API_KEY": "sk-or-v1-abc", "ANTHROPIC_API_KEY": "sk-ant"}) == (
        "openrouter", "auto: OPENAI_API_KEY in the environment is an OpenRouter key (sk-or-…)")
    assert chosen({"OPENAI_API_KEY": "sk-proj-abc", "OPENROUTER_API_KEY": "sk-or-1"})[0] == "openrouter"
    assert chosen({"OPENAI_API_KEY": "sk-proj-abc"})[0] == "openai"
    assert chosen({}) == ("openrouter", "auto: no provider key found; OpenRouter is Hermes Agent's default")
    assert chosen({"OPENAI_API_KEY": "sk-proj-abc"}, "  base_url: https://api.deepseek.com/v1\n") == (
        "deepseek", "auto: model.base_url is on api.deepseek.com, DeepSeek's host")
    name, why = chosen({"OPENAI_API_KEY": "sk-proj-abc"}, "  base_url: https://llm.internal.example/v1\n")
    assert (name, why) == ("custom", "auto: model.base_url is llm.internal.example, a custom endpoint")


def test_names_we_cannot_serve_are_refused_with_what_to_use(hermes_home: Path) -> None:
    for name, advice in (("openai-codex", "use provider: openai"), ("bedrock", "OpenAI-compatible gateway"),
                         ("copilot-acp", "provider: copilot")):
        with pytest.raises(ProviderError) as caught:
            resolve_provider(make_config(f"model:\n  provider: {name}\n  default: m\n"), hermes_home, {})
        assert str(caught.value).startswith(f"provider {name!r} ") and advice in str(caught.value)
    with pytest.raises(ProviderError, match="api_mode codex_responses .the OpenAI Responses API. is not served"):
        resolve_provider(make_config("model:\n  provider: openai\n  default: m\n  api_mode: codex_responses\n"),
                         hermes_home, {})
    with pytest.raises(ProviderError, match=r"providers.zai.enabled is false"):
        resolve_provider(make_config("model:\n  provider: zai\n  default: m\nproviders:\n  zai:\n    enabled: false\n"),
                         hermes_home, {})


def test_every_documented_name_and_alias_resolves(hermes_home: Path) -> None:
    documented = ["openrouter", "nous", "nous-api", "anthropic", "openai", "gemini", "zai", "kimi-coding", "minimax",
                  "minimax-cn", "huggingface", "nvidia", "xiaomi", "arcee", "ollama-cloud", "deepinfra", "kilocode",
                  "ai-gateway", "azure-foundry", "lmstudio", "deepseek", "xai", "groq", "mistral", "together",
                  "copilot", "custom", "ollama", "vllm", "llamacpp", "glm", "kimi", "claude", "google"]
    for name in documented:
        url = "  base_url: https://x.services.ai.azure.com/models\n" if name in ("azure-foundry", "custom") else ""
        settings = resolve_provider(make_config(f"model:\n  provider: {name}\n  default: m\n{url}"), hermes_home, {})
        assert settings is not None and settings.base_url, name
    assert find("glm").name == "zai" and find("nous-api").name == "nous"
    assert resolve_provider(make_config("model:\n  provider: minimax\n  default: m\n"), hermes_home, {}).kind == "anthropic"


def test_the_key_rule_itself() -> None:
    zai = find("zai")
    assert zai is not None
    assert conventional_key_allowed(zai, "https://api.z.ai/api/paas/v4")
    assert conventional_key_allowed(zai, "https://open.bigmodel.cn/api/paas/v4")
    assert not conventional_key_allowed(zai, "http://api.z.ai/api/paas/v4")  # never in clear text
    assert not conventional_key_allowed(zai, "https://api.z.ai.evil.example/v4")
    assert not conventional_key_allowed(zai, "https://evilapi.z.ai.example/v4")
    assert not conventional_key_allowed(zai, "https://notapi.z.ai@evil.example/v4")
    assert not usable("your_api_key_here") and not usable("sk-xxxxxxxx") and usable("sk-real-1234")
    assert all(spec.key_optional or spec.hosts or spec.base_url is None for spec in PROVIDERS)


def test_docs_providers_md_is_generated_from_the_table() -> None:
    docs = Path(__file__).parent.parent / "docs" / "providers.md"
    assert docs.read_text() == markdown(), "run: python scripts/providers_md.py"


async def _ignore(piece: str) -> None:
    pass


# -- found in review: each of these leaked or crashed before it was fixed ---------------------


async def test_credentials_the_sdks_find_in_the_environment_are_never_sent(
        hermes_home: Path, elsewhere: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"OPENAI_CUSTOM_HEADERS": "X-Gateway-Key: header-SECRET", "OPENAI_ORG_ID": "org-SECRET",
                        "OPENAI_PROJECT_ID": "proj-SECRET", "ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Key: header-SECRET",
                        "ANTHROPIC_AUTH_TOKEN": "token-SECRET"}.items():
        monkeypatch.setenv(name, value)
    elsewhere.add({"text": "a"}, {"text": "b"})
    for provider in ("zai", "minimax"):  # chat completions, and Anthropic's wire
        settings = resolve(f"model:\n  provider: {provider}\n  default: m\n  base_url: {elsewhere.url}\n"
                           "  max_retries: 0\n", hermes_home)
        await ask(settings)
    seen = json.dumps(elsewhere.headers)
    assert "SECRET" not in seen and "x-gateway-key" not in seen and "openai-organization" not in seen
    assert sent_keys(elsewhere) == []


async def test_a_key_written_for_one_endpoint_does_not_follow_another(hermes_home: Path, here: FakeModelServer,
                                                                     elsewhere: FakeModelServer) -> None:
    here.add({"text": "ok"}, {"text": "ok"})
    elsewhere.add(*[{"text": "ok"}] * 4)
    # auto picks a provider from the environment: the model section's key was written for another one
    auto = resolve("model:\n  provider: auto\n  default: m\n  api_key: explicit-SECRET\n"
                   "  default_headers: {X-Team: header-SECRET}\n", hermes_home)
    assert auto.name == "openrouter" and auto.api_key == "sk-or-SECRET" and auto.headers == {}
    assert auto.withheld and "provider auto chose openrouter from the environment" in auto.withheld[0]
    # GLM_BASE_URL points zai elsewhere: the key named on the zai entry is for zai's hosts
    moved = resolve("model:\n  provider: zai\n  default: m\nproviders:\n  zai:\n    key_env: MODEL_API_KEY\n"
                    "    extra_headers: {X-Team: header-SECRET}\n", hermes_home,
                    {"MODEL_API_KEY": "explicit-SECRET", "GLM_BASE_URL": elsewhere.url})
    assert await ask(moved) == "ok" and secrets_seen(elsewhere) == []
    assert moved.withheld == [f"providers.zai.key_env, providers.zai.extra_headers.X-Team not sent to "
                              f"{elsewhere.url}: written for the provider's own hosts"]
    # model.base_url overrides an entry's own base_url: the entry's key stays with its endpoint
    overridden = resolve(f"model:\n  provider: box\n  default: m\n  base_url: {elsewhere.url}\nproviders:\n  box:\n"
                         f"    base_url: {here.url}\n    api_key: explicit-SECRET\n", hermes_home)
    assert await ask(overridden) == "ok" and secrets_seen(elsewhere) == []
    # a fallback with its own base_url does not borrow the secrets of the entry it names
    fallback = resolve(f"model:\n  provider: box\n  default: m\nproviders:\n  box:\n    base_url: {here.url}\n"
                       f"    api_key: explicit-SECRET\nfallback_providers:\n  - provider: box\n    model: m2\n"
                       f"    base_url: {elsewhere.url}\n", hermes_home).fallbacks[0]
    assert fallback.api_key is None and await ask(fallback) == "ok" and secrets_seen(elsewhere) == []
    # a --base-url flag is not where model.api_key was written for
    flagged = resolve(f"model:\n  provider: custom\n  default: m\n  base_url: {here.url}\n  api_key: explicit-SECRET\n",
                      hermes_home, base_url=elsewhere.url)
    assert await ask(flagged) == "ok" and secrets_seen(elsewhere) == []
    assert "model.api_key not sent to" in flagged.withheld[0]


async def test_no_secret_is_quoted_in_an_error(hermes_home: Path, elsewhere: FakeModelServer) -> None:
    with pytest.raises(ProviderError) as caught:
        resolve(f"model:\n  provider: custom\n  default: m\n  base_url: {elsewhere.url}\n"
                "  api_key: \"explicit-\\nSECRET\"\n", hermes_home)
    assert str(caught.value) == ("model.api_key holds a control character (a line break?): a key or a header value "
                                 "must be one line of text")
    with pytest.raises(ProviderError) as caught:
        resolve(f"model:\n  provider: custom\n  default: m\n  base_url: {elsewhere.url}\n"
                "  default_headers: {X-Team: \"a\\rheader-SECRET\"}\n", hermes_home)
    assert "SECRET" not in str(caught.value)
    elsewhere.add({"status": 400, "error": "your key explicit-SECRET is bad"})
    settings = resolve(f"model:\n  provider: custom\n  default: m\n  base_url: http://user:pw-SECRET@127.0.0.2:"
                       f"{elsewhere.port}/v1?token=q-SECRET\n  api_key: explicit-SECRET\n  max_retries: 0\n", hermes_home)
    assert "SECRET" not in repr(settings) and settings.shown_url == f"http://127.0.0.2:{elsewhere.port}/v1"
    with pytest.raises(ProviderError) as caught:
        await ask(settings)
    assert "SECRET" not in str(caught.value) and "[secret]" in str(caught.value)
    from hermes_tui.config import ConfigError, parse_config

    with pytest.raises(ConfigError) as config_error:
        parse_config("model:\n  api_key: [explicit-SECRET]\n  default_headers: 'Authorization: Bearer header-SECRET'\n")
    assert "SECRET" not in str(config_error.value) and "model.api_key = (a list, not shown)" in str(config_error.value)


@pytest.mark.parametrize("yaml_text", [
    "model:\n  provider: custom\n  default: m\n  base_url: 'http://[::1/v1'\n",
    "model:\n  provider: custom\n  default: m\n  base_url: 'http://127.0.0.1:99999/v1'\n",
    "model:\n  provider: openrouter\n  default: m\nfallback_providers:\n  - {provider: [x], model: m}\n",
])
def test_odd_values_are_one_line_never_a_traceback(hermes_home: Path, yaml_text: str) -> None:
    from hermes_tui.config import ConfigError, parse_config

    try:
        config = parse_config(yaml_text)
        resolve_provider(config, hermes_home, {})
    except (ProviderError, ConfigError) as exc:
        assert "\n" not in str(exc)
    for extra in ("  extra_headers: [a]\n", "  default_headers: x\n  extra_headers: {a: b}\n"):
        with pytest.raises(ConfigError):
            parse_config("model:\n  default: m\n" + extra)


async def test_key_cmd_output_is_read_to_its_end(hermes_home: Path, tmp_path: Path,
                                                  elsewhere: FakeModelServer) -> None:
    pieces = key_script(tmp_path, "import sys, time, json\nsys.stdout.write('{\"access_token\": \"token-')\n"
                                  "sys.stdout.flush()\ntime.sleep(0.2)\nsys.stdout.write('SECRET\"}' + ' ' * 30000)\n")
    settings = resolve(f"model:\n  provider: box\n  default: m\nproviders:\n  box:\n    base_url: {elsewhere.url}\n"
                       f"    key_cmd: {pieces}\n", hermes_home)
    assert await settings.key_command.token() == "token-SECRET"
    helper = tmp_path / "leaves_a_child.py"
    helper.write_text("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                      "print('token-SECRET')\n")
    settings = resolve(f"model:\n  provider: box\n  default: m\nproviders:\n  box:\n    base_url: {elsewhere.url}\n"
                       f"    key_cmd: {sys.executable} {helper}\n", hermes_home)
    started = asyncio.get_running_loop().time()
    assert await settings.key_command.token() == "token-SECRET"
    assert asyncio.get_running_loop().time() - started < 10  # not the 30 s timeout


def test_hosts_that_only_look_like_a_providers(hermes_home: Path) -> None:
    openai, lmstudio = find("openai"), find("lmstudio")
    assert not conventional_key_allowed(openai, "http://127.0.0.1.api.openai.com/v1")
    assert conventional_key_allowed(openai, "https://127.0.0.1.api.openai.com/v1")  # a subdomain, over HTTPS
    assert not conventional_key_allowed(lmstudio, "https://evil.localhost/v1")
    assert conventional_key_allowed(lmstudio, "http://localhost:1234/v1")
    azure = find("azure-foundry")
    assert not conventional_key_allowed(azure, "https://someone-else.openai.azure.com/v1")
    assert conventional_key_allowed(azure, "https://mine.openai.azure.com/v1", "https://mine.openai.azure.com/models")
    settings = resolve_provider(make_config("model:\n  provider: copilot\n  default: gpt-4o\n"), hermes_home,
                                {"AZURE_FOUNDRY_API_KEY": "azure-SECRET"})
    assert settings.api_key is None  # GitHub's host never gets an Azure key


def test_fallbacks_name_entries_as_the_model_section_does(hermes_home: Path) -> None:
    settings = resolve_provider(make_config(
        "model:\n  provider: MyProxy\n  default: m\nproviders:\n  MyProxy:\n    base_url: https://proxy.example/v1\n"
        "    api_key: explicit-SECRET\nfallback_providers:\n  - provider: custom:myproxy\n    model: m2\n"), hermes_home, {})
    assert settings.base_url == "https://proxy.example/v1" and settings.api_key == "explicit-SECRET"
    assert [(f.base_url, f.api_key) for f in settings.fallbacks] == [("https://proxy.example/v1", "explicit-SECRET")]
