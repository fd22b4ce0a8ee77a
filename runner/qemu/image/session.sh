#!/bin/sh
# The session of `user` on display :0, started by deskhand-session.service once X runs. The
# session bus has a fixed address (the unit's DBUS_SESSION_BUS_ADDRESS) so that scripts run
# through the guest agent and the desktop app find it, and with it the accessibility bus.
set -eu
if [ "${1:-}" = started ]; then
  # Run by openbox once it manages the screen (--startup below): the app disk's part of the
  # session, when the runner attached one (the desktop app waiting for its pairing code and the
  # launcher panel, runner/qemu/app-disk/session.sh), then the mark the runner waits for.
  if grep -qsx deskhand-app /sys/block/vd*/serial; then
    # Attached: the first look at /opt/deskhand mounts it (an automount, fstab), waiting for
    # udev to announce the disk if it has not yet, which under TCG can take half a minute.
    ( [ -x /opt/deskhand/session.sh ] && exec /opt/deskhand/session.sh ) &
  fi
  touch "$XDG_RUNTIME_DIR/deskhand-session-ready"
  exit 0
fi
for i in $(seq 400); do [ -S /tmp/.X11-unix/X0 ] && break; sleep 0.05; done
rm -f "$XDG_RUNTIME_DIR/deskhand-session-ready" "$XDG_RUNTIME_DIR/bus"
dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --nopidfile
xsetroot -solid '#2e3440' 2>/dev/null || true
# openbox runs --startup once it manages the screen (a window mapped before would be left unmapped).
exec openbox --startup "/usr/local/lib/deskhand/session.sh started"
