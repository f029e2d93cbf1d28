#!/bin/sh
# The test host's one process: sshd in the foreground, accepting root with the key in $AUTHORIZED_KEY
# (the tests' fixture generates a pair per session). The host key is made here, so that no two
# containers share one: ed25519 alone, made in milliseconds (RSA's took seconds before sshd listened).
set -eu
mkdir -p /run/sshd /root/.ssh
chmod 700 /root/.ssh
printf '%s\n' "${AUTHORIZED_KEY:?the container needs AUTHORIZED_KEY (a public key)}" >/root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
exec /usr/sbin/sshd -D -e -h /etc/ssh/ssh_host_ed25519_key
