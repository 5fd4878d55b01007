"""The providers hermes-tui can talk to: one table, the names Hermes Agent documents.

Each :class:`ProviderSpec` says where a provider lives (its default base URL), which
environment variables conventionally hold its key, and which hosts such a key may be sent
to. That last part is the rule that keeps keys safe (see :mod:`.keys`): a key found by a
conventional name (``OPENAI_API_KEY``) only ever goes to that provider's own hosts
(``api.openai.com``); any other host gets a key only when the config names one for it.

``docs/providers.md`` is generated from this table (``python scripts/providers_md.py``), and a
test keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Wire = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class ProviderSpec:
    """One provider we can serve."""

    name: str
    title: str
    base_url: str | None
    """None: the user must give one (``model.base_url``), e.g. Azure or a custom server."""
    key_envs: tuple[str, ...] = ()
    """Conventional variables holding its key, tried in order."""
    hosts: tuple[str, ...] = ()
    """Hosts (and their subdomains) a conventional key may be sent to."""
    aliases: tuple[str, ...] = ()
    wire: Wire = "openai"
    """``openai``: chat completions; ``anthropic``: the Messages API."""
    url_env: str | None = None
    """A variable that replaces the default base URL (Hermes Agent's ``*_BASE_URL``)."""
    key_optional: bool = False
    """A local server that usually takes no key."""
    auto: bool = True
    """Chosen by ``provider: auto`` when its key is present."""
    url_bound: bool = False
    """Its hosts belong to its customers (``<resource>.openai.azure.com``): a conventional key
    goes only to the URL its ``url_env`` variable names, never to another customer's host."""


PROVIDERS: tuple[ProviderSpec, ...] = (
    # The order is the order `provider: auto` tries them in (Hermes Agent's, OpenRouter first).
    ProviderSpec("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",),
                 ("openrouter.ai",), ("or",), url_env="OPENROUTER_BASE_URL"),
    ProviderSpec("openai", "OpenAI", "https://api.openai.com/v1", ("OPENAI_API_KEY",), ("api.openai.com",),
                 ("openai-api",), url_env="OPENAI_BASE_URL"),
    ProviderSpec("gemini", "Google Gemini (OpenAI-compatible endpoint)",
                 "https://generativelanguage.googleapis.com/v1beta/openai/", ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
                 ("generativelanguage.googleapis.com",), ("google", "google-gemini", "google-ai-studio"),
                 url_env="GEMINI_BASE_URL"),
    ProviderSpec("zai", "Z.AI / GLM", "https://api.z.ai/api/paas/v4", ("GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"),
                 ("api.z.ai", "open.bigmodel.cn"), ("glm", "z-ai", "z.ai", "zhipu"), url_env="GLM_BASE_URL"),
    ProviderSpec("kimi-coding", "Kimi / Moonshot", "https://api.moonshot.ai/v1", ("KIMI_API_KEY", "KIMI_CODING_API_KEY"),
                 ("api.moonshot.ai", "api.kimi.com"), ("kimi", "moonshot", "kimi-for-coding"), url_env="KIMI_BASE_URL"),
    ProviderSpec("kimi-coding-cn", "Kimi / Moonshot (China)", "https://api.moonshot.cn/v1", ("KIMI_CN_API_KEY",),
                 ("api.moonshot.cn",), ("kimi-cn", "moonshot-cn")),
    ProviderSpec("stepfun", "StepFun", "https://api.stepfun.ai/step_plan/v1", ("STEPFUN_API_KEY",), ("api.stepfun.ai",),
                 ("step",), url_env="STEPFUN_BASE_URL"),
    ProviderSpec("arcee", "Arcee AI", "https://api.arcee.ai/api/v1", ("ARCEEAI_API_KEY",), ("api.arcee.ai",),
                 ("arcee-ai", "arceeai"), url_env="ARCEE_BASE_URL"),
    ProviderSpec("minimax", "MiniMax", "https://api.minimax.io/anthropic", ("MINIMAX_API_KEY",), ("api.minimax.io",),
                 ("mini-max",), wire="anthropic", url_env="MINIMAX_BASE_URL"),
    ProviderSpec("anthropic", "Anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY", "ANTHROPIC_TOKEN"),
                 ("api.anthropic.com",), ("claude",), wire="anthropic", url_env="ANTHROPIC_BASE_URL"),
    ProviderSpec("alibaba", "Alibaba Cloud (DashScope)", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                 ("DASHSCOPE_API_KEY",), ("dashscope-intl.aliyuncs.com", "dashscope.aliyuncs.com"),
                 ("dashscope", "alibaba-cloud", "qwen-dashscope"), url_env="DASHSCOPE_BASE_URL"),
    ProviderSpec("minimax-cn", "MiniMax (China)", "https://api.minimaxi.com/anthropic", ("MINIMAX_CN_API_KEY",),
                 ("api.minimaxi.com",), ("minimax-china", "minimax_cn"), wire="anthropic", url_env="MINIMAX_CN_BASE_URL"),
    ProviderSpec("deepseek", "DeepSeek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",), ("api.deepseek.com",),
                 ("deepseek-chat",), url_env="DEEPSEEK_BASE_URL"),
    ProviderSpec("xai", "xAI (Grok)", "https://api.x.ai/v1", ("XAI_API_KEY",), ("api.x.ai",), ("grok", "x-ai", "x.ai"),
                 url_env="XAI_BASE_URL"),
    ProviderSpec("nvidia", "NVIDIA NIM", "https://integrate.api.nvidia.com/v1", ("NVIDIA_API_KEY",),
                 ("integrate.api.nvidia.com",), ("nvidia-nim", "nim"), url_env="NVIDIA_BASE_URL"),
    ProviderSpec("ai-gateway", "Vercel AI Gateway", "https://ai-gateway.vercel.sh/v1", ("AI_GATEWAY_API_KEY",),
                 ("ai-gateway.vercel.sh",), ("aigateway", "vercel", "vercel-ai-gateway"), url_env="AI_GATEWAY_BASE_URL"),
    ProviderSpec("kilocode", "Kilo Code gateway", "https://api.kilo.ai/api/gateway", ("KILOCODE_API_KEY",),
                 ("api.kilo.ai",), ("kilo", "kilo-code", "kilo-gateway"), url_env="KILOCODE_BASE_URL"),
    ProviderSpec("huggingface", "Hugging Face router", "https://router.huggingface.co/v1", ("HF_TOKEN",),
                 ("router.huggingface.co",), ("hf", "hugging-face", "huggingface-hub"), url_env="HF_BASE_URL"),
    ProviderSpec("xiaomi", "Xiaomi MiMo", "https://api.xiaomimimo.com/v1", ("XIAOMI_API_KEY",), ("api.xiaomimimo.com",),
                 ("mimo", "xiaomi-mimo"), url_env="XIAOMI_BASE_URL"),
    ProviderSpec("ollama-cloud", "Ollama Cloud", "https://ollama.com/v1", ("OLLAMA_API_KEY",), ("ollama.com",),
                 ("ollama_cloud",), url_env="OLLAMA_BASE_URL"),
    ProviderSpec("azure-foundry", "Azure AI Foundry (API key)", None, ("AZURE_FOUNDRY_API_KEY",), (),
                 ("azure", "azure-ai-foundry", "azure-ai"), url_env="AZURE_FOUNDRY_BASE_URL", url_bound=True),
    ProviderSpec("deepinfra", "DeepInfra", "https://api.deepinfra.com/v1/openai", ("DEEPINFRA_API_KEY",),
                 ("api.deepinfra.com",), ("deep-infra",), url_env="DEEPINFRA_BASE_URL"),
    ProviderSpec("fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",),
                 ("api.fireworks.ai",), ("fireworks-ai", "fw")),
    ProviderSpec("novita", "Novita AI", "https://api.novita.ai/openai/v1", ("NOVITA_API_KEY",), ("api.novita.ai",),
                 ("novita-ai",), url_env="NOVITA_BASE_URL"),
    ProviderSpec("groq", "Groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), ("api.groq.com",)),
    ProviderSpec("mistral", "Mistral AI", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), ("api.mistral.ai",)),
    ProviderSpec("together", "Together AI", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",),
                 ("api.together.xyz",)),
    ProviderSpec("nous", "Nous Research inference API", "https://inference-api.nousresearch.com/v1", ("NOUS_API_KEY",),
                 ("inference-api.nousresearch.com",), ("nous-api", "nous-portal", "nousresearch"),
                 url_env="NOUS_INFERENCE_BASE_URL"),
    ProviderSpec("copilot", "GitHub Models", "https://models.github.ai/inference",
                 ("COPILOT_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"),
                 ("models.github.ai", "models.inference.ai.azure.com"), ("github", "github-models", "github-copilot"),
                 auto=False),
    ProviderSpec("lmstudio", "LM Studio (local)", "http://127.0.0.1:1234/v1", ("LM_API_KEY",), ("127.0.0.1", "localhost"),
                 ("lm-studio", "lm_studio"), url_env="LM_BASE_URL", key_optional=True, auto=False),
    ProviderSpec("ollama", "Ollama (local)", "http://localhost:11434/v1", (), (), key_optional=True, auto=False),
    ProviderSpec("vllm", "vLLM (local)", "http://localhost:8000/v1", (), (), key_optional=True, auto=False),
    ProviderSpec("llamacpp", "llama.cpp server (local)", "http://localhost:8080/v1", (), (), ("llama.cpp", "llama-cpp"),
                 key_optional=True, auto=False),
    ProviderSpec("custom", "Any OpenAI-compatible endpoint (model.base_url)", None, (), (), ("local",),
                 key_optional=True, auto=False),
)
"""Every provider we serve, in ``provider: auto`` order."""

REFUSED: dict[str, str] = {
    # name: why we cannot serve it, and what to use instead
    "openai-codex": "signs in with a ChatGPT account (OAuth) and speaks the Responses API; "
                    "use provider: openai with OPENAI_API_KEY",
    "codex": "is openai-codex: a ChatGPT sign-in (OAuth); use provider: openai with OPENAI_API_KEY",
    "chatgpt": "is openai-codex: a ChatGPT sign-in (OAuth); use provider: openai with OPENAI_API_KEY",
    "xai-oauth": "signs in with OAuth; use provider: xai with XAI_API_KEY",
    "qwen-oauth": "signs in with the Qwen CLI's OAuth; use provider: alibaba with DASHSCOPE_API_KEY",
    "minimax-oauth": "signs in with OAuth; use provider: minimax with MINIMAX_API_KEY",
    "copilot-acp": "runs Copilot as a separate agent process; use provider: copilot (GitHub Models) with GITHUB_TOKEN",
    "bedrock": "needs the AWS SDK's signed requests; use an OpenAI-compatible gateway with provider: custom",
    "vertex": "needs Google Cloud OAuth; use provider: gemini with GEMINI_API_KEY, or provider: custom "
              "with key_cmd on a providers: entry",
    "moa": "is Hermes Agent's mixture-of-agents; choose one provider",
}
"""Names Hermes Agent knows that hermes-tui cannot serve (each refused with this line)."""

API_MODES_REFUSED = {
    "codex_responses": "the OpenAI Responses API",
    "bedrock_converse": "AWS Bedrock's Converse API",
    "codex_app_server": "the Codex app server",
}
"""``api_mode`` values we cannot speak (chat completions and Anthropic messages only)."""

_BY_NAME: dict[str, ProviderSpec] = {}
for _spec in PROVIDERS:
    for _name in (_spec.name, *_spec.aliases):
        _BY_NAME[_name] = _spec


def find(name: str) -> ProviderSpec | None:
    """The provider called ``name`` (or one of its aliases), case-insensitively."""
    return _BY_NAME.get(name.strip().lower())


def host_matches(host: str, allowed: tuple[str, ...]) -> bool:
    """True when ``host`` is one of ``allowed`` or a subdomain of one (of a name: an address,
    or ``localhost``, has no subdomains that stay on it)."""
    host = host.lower().rstrip(".")
    return any(host == h or (h != "localhost" and not h[0].isdigit() and host.endswith("." + h)) for h in allowed)


def owner_of(url: str) -> ProviderSpec | None:
    """The cloud provider whose hosts ``url`` is on (None: a host no provider of ours owns)."""
    host = urlsplit(url).hostname or ""
    return next((spec for spec in PROVIDERS if spec.hosts and not spec.key_optional and host_matches(host, spec.hosts)),
                None)


def markdown() -> str:
    """``docs/providers.md``: the table above, for people."""
    lines = [
        "# Providers",
        "",
        "<!-- Generated from hermes_tui/agent/models/catalog.py by `python scripts/providers_md.py`; do not edit. -->",
        "",
        "Set `model.provider` to a name (or an alias) below, `model.default` to the model, and the key in the",
        "environment or `$HERMES_HOME/.env`. A key found by a variable in the *key* column is only ever sent",
        "to the hosts in the *hosts* column, over HTTPS; to send a key anywhere else, name it on the provider",
        "entry (`providers.<name>.api_key`, `key_env` or `key_cmd`) or in `model.api_key` (see docs/config.md).",
        "`provider: auto` tries the rows marked *auto* in this order.",
        "",
        "| name | aliases | base URL | key | hosts | wire | auto |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in PROVIDERS:
        keys = " or ".join(f"`{k}`" for k in spec.key_envs) + (" (optional)" if spec.key_optional and spec.key_envs else "")
        hosts = ", ".join(spec.hosts) or (f"only the URL in `{spec.url_env}`" if spec.url_bound else "–")
        if not spec.key_envs:
            keys = "none (local)" if spec.base_url else "`model.api_key` or a providers entry"
        url = f"`{spec.base_url}`" if spec.base_url else "your `model.base_url`"
        if spec.url_env:
            url += f" (or `{spec.url_env}`)"
        cells = [f"**{spec.name}**", ", ".join(spec.aliases) or "–", url, keys, hosts,
                 "Anthropic messages" if spec.wire == "anthropic" else "chat completions", "yes" if spec.auto else "no"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Names we cannot serve", "",
              "These are refused with one line; nothing is sent anywhere else instead.", ""]
    lines += [f"- **{name}** {why}." for name, why in REFUSED.items()]
    lines += ["", "`api_mode` values other than `chat_completions` and `anthropic_messages` are refused the same way: "
              + ", ".join(f"`{mode}` ({what})" for mode, what in API_MODES_REFUSED.items()) + ".", ""]
    return "\n".join(lines)
