"""Captioning clips through audio-language-model APIs (AudioCapBench's loop). Plain Python: no Django import.

    prompts    prompts per domain written after AudioCapBench's description (two variants, used alternately),
               and prompt files (the benchmark's own prompts, for whoever holds them)
    answers    what a model's answer becomes: markdown stripped, JSON unwrapped; what is not a caption refused
    audio      the stored clip transcoded (and trimmed) to what a provider accepts
    providers  one class per API, each through the provider's official client library
    pricing    the price table: a cost estimate before a run, the cost of each answer
    runner     retries with exponential backoff (Retry-After honoured), a concurrency limit, stop on request

The Django side (metrics_bridge/services/captioning/) reads clips, keeps the answer cache, files the answers
as a captioning system and starts the metric run.
"""
