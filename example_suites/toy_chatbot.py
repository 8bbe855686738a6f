"""A stand-in for a chat model under test: answers the conversation so far.

A conversation suite's ``outputs.target`` is called with the case; ``case.messages`` is the
conversation so far (``Message(role, content)`` turns, ending with the user's turn) and the
function returns the next assistant turn. A real target passes the turns to its chat API.
"""

from __future__ import annotations

from typing import Any

# What this toy model says next, by the user's last turn.
REPLIES = {
    "Und am Sonntag?": "Am Sonntag hat das Museum von 10 bis 16 Uhr geöffnet, der Eintritt bleibt 12 Euro.",
    "ये कितने बजे खुलता है?": "लाल किला सुबह साढ़े नौ बजे खुलता है और सोमवार को बंद रहता है।",
}


def reply(case: Any) -> str:
    turns = case.messages
    if not turns or turns[-1].role != "user":
        raise ValueError(f"case {case.id}: the conversation so far should end with the user's turn")
    return REPLIES[turns[-1].content]
