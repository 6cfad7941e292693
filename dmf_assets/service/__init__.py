"""Unattended operation: systemd units (`dmf service install|uninstall`) and `dmf serve-reports`."""
