"""EXIT: stop the Unity core (BASE group 0x1FF, code 0x1F)."""

from ..dispatch import handler


@handler("exit")
def exit_(x):
    return "exit"
