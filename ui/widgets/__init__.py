"""The urwid widgets of the chat: the whole screen (`layout`), the start-up card, the
transcript, the composer, the status row, the chooser and the model's questions.

Widgets read `actors.events` and emit them; they never call the domain or the actors directly.
"""
