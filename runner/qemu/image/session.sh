#!/bin/sh
# The session of `user` on display :0, started by deskhand-session.service once X runs. The
# session bus has a fixed address (the unit's DBUS_SESSION_BUS_ADDRESS) so that scripts run
# through the guest agent and the desktop app find it, and with it the accessibility bus.
set -eu
for i in $(seq 400); do [ -S /tmp/.X11-unix/X0 ] && break; sleep 0.05; done
rm -f "$XDG_RUNTIME_DIR/deskhand-session-ready" "$XDG_RUNTIME_DIR/bus"
dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --nopidfile
xsetroot -solid '#2e3440' 2>/dev/null || true
# openbox runs --startup once it manages the screen: the mark the runner waits for.
exec openbox --startup "touch $XDG_RUNTIME_DIR/deskhand-session-ready"
