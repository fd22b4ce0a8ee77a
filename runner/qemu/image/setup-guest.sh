#!/bin/sh
# Configures the debian-12 image, run by runner/qemu/image-builder.ts inside the built tree
# (chroot) after its packages are installed. The recipe's other files are in /tmp/recipe.
set -eu
recipe=/tmp/recipe

echo deskhand-machine > /etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\tdeskhand-machine\n' > /etc/hosts
cp "$recipe/fstab" /etc/fstab
mkdir -p /opt/deskhand /etc/systemd/journald.conf.d
cp "$recipe/journald.conf" /etc/systemd/journald.conf.d/deskhand.conf
echo 'LANG=C.UTF-8' > /etc/default/locale
ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime

# The person of the machine: `user`, $HOME /home/user, no password (nobody logs in over a network).
useradd --create-home --uid 1000 --user-group --shell /bin/bash --groups audio,video,input user
passwd --delete user >/dev/null
passwd --lock root >/dev/null

# Network: static address on QEMU's user-mode network.
cp "$recipe/80-deskhand.network" /etc/systemd/network/80-deskhand.network
systemctl enable systemd-networkd.service >/dev/null 2>&1

# X on the virtual GPU and the user's session.
mkdir -p /etc/X11/xorg.conf.d /usr/local/lib/deskhand
cp "$recipe/10-deskhand-screen.conf" /etc/X11/xorg.conf.d/10-deskhand-screen.conf
install -m 0755 "$recipe/session.sh" /usr/local/lib/deskhand/session.sh
cp "$recipe/deskhand-xorg.service" "$recipe/deskhand-session.service" /etc/systemd/system/
systemctl enable deskhand-xorg.service deskhand-session.service >/dev/null 2>&1
systemctl set-default multi-user.target >/dev/null 2>&1

# Nothing runs on a timer behind a test's back (a snapshot would carry it into every machine).
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer \
            dpkg-db-backup.timer systemd-tmpfiles-clean.timer getty@tty1.service; do
  systemctl mask "$unit" >/dev/null 2>&1 || true
done

# Chromium: accessibility on from its start, so the desktop app sees its pages.
mkdir -p /etc/chromium.d
echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --force-renderer-accessibility --no-first-run --password-store=basic"' > /etc/chromium.d/deskhand

# Lean: a virtual machine has no wireless, sound, camera, InfiniBand or real GPU; their kernel
# modules are some 300 MB of the image. The initrd is made again without them.
for version in $(ls /lib/modules); do
  kernel=/lib/modules/$version/kernel
  rm -rf "$kernel/drivers/gpu/drm/amd" "$kernel/drivers/gpu/drm/nouveau" "$kernel/drivers/gpu/drm/i915" \
         "$kernel/drivers/gpu/drm/radeon" "$kernel/drivers/net/wireless" "$kernel/drivers/media" \
         "$kernel/drivers/infiniband" "$kernel/drivers/staging" "$kernel/drivers/bluetooth" "$kernel/drivers/isdn" \
         "$kernel/drivers/iio" "$kernel/sound" "$kernel/net/wireless" "$kernel/net/mac80211" "$kernel/net/bluetooth"
  depmod "$version"
done
update-initramfs -u -k all >/dev/null

# Lean: apt's lists and caches go (the packages are not updated inside a machine).
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/*.log /var/log/apt/* /tmp/recipe
