# serial: every kernel on the calling thread, one group after another. Always built: the
# reference for the others and the fallback of "auto".
set(KAAS_ENABLE_SERIAL ON)
kaas_backend(serial
  LAUNCH_HEADER kaas/backends/cpu/launch_serial.h
  RUNTIME_SOURCES serial_backend.cc)
