"""Small inputs in the FENSE pairwise format, shaped like AudioCaps-Eval."""


def audiocaps_eval_like() -> list[dict]:
    """Two items shaped like AudioCaps-Eval: audio_id everywhere, raw_name once, nulls, missing keys, an extra field."""
    return [
        {
            "audio_id": "abc-DEF_123",
            "raw_name": "Yabc-DEF_123.wav",
            "references": ["a dog barks", "a dog barks", "a man speaks", "wind blows", "birds sing"],
            "HC": ["a dog barks", "a dog barks", "human_1", "human_2", [1, 0, -1, 1]],
            "HI": ["a man speaks", "a car passes by", "abc-DEF_123_human_3", "zzz999_human_1", [1, 1, 1, -1]],
            "HM": ["wind blows", "wind is blowing", "human_4", "sys_a", {"note": "extra field"}, [-1, -1, 0, 1]],
            "MM_1": ["wind is blowing", "a dog", "sys_a", "sys_b", [1, 1, 1, 1]],
            "MM_2": None,
        },
        {
            "audio_id": "xyz987",
            "references": ["rain falls", "rain falls on a roof", "it rains", "heavy rain", "rain and thunder"],
            "HC": ["heavy rain", "it rains", "human_4", "human_3", [0, 0, 0, 0]],
            "MM_1": None,
            "MM_2": ["rain", "water flows", "sys_b", "sys_c", "extra", 7, [-1, 1, -1, 1]],
            "MM_5": ["water flows", "rain", "sys_c", "sys_b", [1, -1, 1, -1]],
        },
    ]
