from vllm import AsyncLLMEngine  # noqa: F401  (utils.create_vllm imports it from here)
