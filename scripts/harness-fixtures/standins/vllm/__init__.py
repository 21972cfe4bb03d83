"""Stand-in for vLLM: the LLM (batch) and AsyncLLMEngine (server) calls the
harness makes, answering with deterministic text after the time a small
model would take, while driving the simulated GPU's load (standin_gpu).

Nothing here draws from numpy's global generator (see standin_gpu).
STANDIN_FAIL="<model>@batch:<n>" makes the n-th measured batch of that
model raise, as a CUDA error part-way through a model would.
"""
import asyncio
import hashlib
import os
import time

import standin_gpu

# Hugging Face id -> (batch seconds for 1,000 prompts on an L4, decode
# seconds per token on an L4, weights MiB).
MODELS = {
    "Qwen/Qwen2.5-0.5B-Instruct": (3.4, 0.011, 988),
    "Qwen/Qwen2.5-1.5B-Instruct": (6.1, 0.019, 3087),
}


def _model(name):
    if name not in MODELS:
        raise RuntimeError(f"stand-in vLLM: no figures for {name!r} (it knows {sorted(MODELS)})")
    return MODELS[name]


def _digest(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _answer_tokens(prompt):
    """8 to 64 output tokens, fixed per prompt: short answers keep the
    details CSVs (1,000 rows a batch iteration) small enough to commit."""
    return 8 + _digest(prompt) % 57


def _answer(prompt):
    n = _answer_tokens(prompt)
    # One one-letter "word" per token after the first (the tokenizer
    # below counts words + 1).
    return " ".join("abcdefgh"[(_digest(prompt) + i) % 8] for i in range(n - 1))


class _Tokenizer:
    def encode(self, text):
        return list(range(len(text.split()) + 1))


class SamplingParams:
    def __init__(self, temperature=1.0, top_p=1.0, top_k=0, max_tokens=16,
                 repetition_penalty=1.0, seed=None, **_):
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.max_tokens = max_tokens
        self.repetition_penalty = repetition_penalty
        self.seed = seed

    def __repr__(self):
        # The field order and spelling of vLLM's repr.
        return (
            f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
            f"repetition_penalty={self.repetition_penalty}, temperature={self.temperature}, "
            f"top_p={self.top_p}, top_k={self.top_k}, min_p=0.0, seed={self.seed}, stop=[], "
            f"stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
            f"ignore_eos=False, max_tokens={self.max_tokens}, min_tokens=0, logprobs=None, "
            f"prompt_logprobs=None, skip_special_tokens=True, "
            f"spaces_between_special_tokens=True, truncate_prompt_tokens=None, "
            f"guided_decoding=None, extra_args=None)"
        )


class _Completion:
    def __init__(self, text, token_ids):
        self.text = text
        self.token_ids = token_ids


class _Metrics:
    pass


class RequestOutput:
    def __init__(self, prompt, text, tokens, prompt_tokens, metrics=None):
        self.prompt = prompt
        self.outputs = [_Completion(text, list(range(tokens)))]
        self.prompt_token_ids = list(range(prompt_tokens))
        self.metrics = metrics


def _failure_at(model):
    spec = os.environ.get("STANDIN_FAIL", "")
    if "@batch:" not in spec:
        return None
    name, n = spec.rsplit("@batch:", 1)
    return int(n) if name == model else None


class LLM:
    def __init__(self, model, dtype="auto", trust_remote_code=False,
                 gpu_memory_utilization=0.9, max_model_len=None, **_):
        self.model = model
        self.batch_s, _, mib = _model(model)
        standin_gpu.load_model(mib)
        self._measured_batches = 0
        self._fail_at = _failure_at(model)

    def get_tokenizer(self):
        return _Tokenizer()

    def generate(self, prompts, sampling_params):
        if len(prompts) > 1:
            self._measured_batches += 1
            if self._measured_batches == self._fail_at:
                raise RuntimeError(
                    "CUDA error: an illegal memory access was encountered "
                    "(stand-in failure, STANDIN_FAIL)"
                )
        seconds = self.batch_s / standin_gpu.SPEED * len(prompts) / 1000.0
        standin_gpu.set_batch(True)
        try:
            time.sleep(seconds)
        finally:
            standin_gpu.set_batch(False)
        return [
            RequestOutput(p, _answer(p), _answer_tokens(p), len(p.split()) + 1)
            for p in prompts
        ]


class AsyncEngineArgs:
    def __init__(self, model, **kwargs):
        self.model = model
        self.kwargs = kwargs


class AsyncLLMEngine:
    def __init__(self, model):
        self.model = model
        _, self.token_s, mib = _model(model)
        standin_gpu.load_model(mib)

    @classmethod
    def from_engine_args(cls, engine_args):
        return cls(engine_args.model)

    async def generate(self, prompt, sampling_params, request_id):
        metrics = _Metrics()
        metrics.arrival_time = time.time()
        metrics.queued_ts = time.monotonic()
        metrics.scheduled_ts = metrics.queued_ts
        metrics.is_corrupted = False
        prompt_tokens = len(prompt.split()) + 1
        tokens = _answer_tokens(prompt)
        text = _answer(prompt)
        per_token = self.token_s / standin_gpu.SPEED
        standin_gpu.request_started()
        try:
            # Prefill: a fixed cost and one per prompt token.
            await asyncio.sleep((0.02 + 0.0004 * prompt_tokens) / standin_gpu.SPEED)
            metrics.first_token_ts = time.monotonic()
            metrics.first_token_latency = metrics.first_token_ts - metrics.queued_ts
            yield RequestOutput(prompt, "", 1, prompt_tokens, metrics)
            done = 1
            while done < tokens:
                step = min(8, tokens - done)
                # Decode slows as more requests share the card.
                await asyncio.sleep(step * per_token * (1 + 0.08 * standin_gpu.load() * 4))
                done += step
            metrics.last_token_ts = time.monotonic()
        finally:
            standin_gpu.request_finished()
        yield RequestOutput(prompt, text, tokens, prompt_tokens, metrics)
