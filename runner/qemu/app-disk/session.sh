#!/bin/sh
# The app disk's part of a test machine's session (mounted read-only at /opt/deskhand), started by
# the image's session once openbox manages the screen, as `user` with DISPLAY=:0 and the session
# bus. It starts the session's launcher panel (Browser, Notes, Terminal) and the desktop app,
# which loads, warms up and waits for the runner's pairing code (desktop/src/guest-main.ts);
# each is started again should it stop. Their JSON lines go to logs beside the control files.
app=/opt/deskhand
logs="$XDG_RUNTIME_DIR/deskhand"
mkdir -p "$logs"
chmod 700 "$logs"
(while :; do node "$app/dist/desktop/src/launcher-main.js" >>"$logs/launcher.log" 2>&1; sleep 1; done) &
(while :; do node "$app/dist/desktop/src/guest-main.js" >>"$logs/app.log" 2>&1; sleep 1; done) &
