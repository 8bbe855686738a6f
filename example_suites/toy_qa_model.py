"""A stand-in for the model under test: answers the example QA suite's questions.

A real suite points ``outputs.target`` at a function that calls your model; it receives a
``pytest_llmjudge.Case`` (``case.input``, ``case.language``, ``case.metadata`` ...) and
returns the output text. ``async def`` works too and runs concurrently.
"""

from __future__ import annotations

ANSWERS = {
    "hi-everest": "माउंट एवरेस्ट की ऊँचाई लगभग 8,849 मीटर है।",
    "ar-nile": "يبلغ طول نهر النيل نحو 6650 كيلومترًا.",
    "ja-fuji": "富士山の高さは3776メートルです。",
    "zh-wall": "长城从秦朝开始大规模修建，已有两千多年的历史。",
    "ru-moscow": "Москва была основана в 1147 году князем Юрием Долгоруким.",
    "fr-eiffel": "La tour Eiffel mesure environ 330 mètres de haut.",
    "de-berlin": "Berlin hat ungefähr 3,7 Millionen Einwohner.",
    "bn-language-day": "আন্তর্জাতিক মাতৃভাষা দিবস প্রতি বছর ২১ ফেব্রুয়ারি পালন করা হয়।",
    "ta-chennai": "தமிழ்நாட்டின் தலைநகரம் சென்னை.",
    "sw-kilimanjaro": "Mlima Kilimanjaro una urefu wa mita 5,895 juu ya usawa wa bahari.",
}


def answer(case: object) -> str:
    return ANSWERS[case.id]  # type: ignore[attr-defined]
