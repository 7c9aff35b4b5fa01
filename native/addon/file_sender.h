#pragma once
#include <napi.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace trickle {

// Responses written by sendfile(2) from the file's page cache into the socket, driven by the
// socket's writability on the event loop: no user-space copy, no JavaScript per chunk. Owned by
// one addon instance (no static globals); transfers left at teardown are closed without callback.
class FileSender {
 public:
  FileSender() = default;
  FileSender(const FileSender&) = delete;
  FileSender& operator=(const FileSender&) = delete;
  ~FileSender();

  // Writes `length` bytes of `path` from `offset` into the socket `socketFd` (non-blocking).
  // When every byte was taken at once: minus the sendfile calls that took them (the callback is
  // then never called). Otherwise a transfer id (> 0), and `callback(error | null, sentBytes,
  // sendfileCalls)` once the bytes are taken or it fails.
  double Start(Napi::Env env, int socketFd, const std::string& path, uint64_t offset, uint64_t length, Napi::Function callback);
  // Stops a transfer without its callback (the client left). Returns the bytes it had sent, or -1 for an unknown id.
  double Cancel(uint32_t id);

 private:
  struct Transfer;
  // sendfile until the socket is full, the range is sent, or an error: 0 done, EAGAIN wait, else errno.
  static int Pump(Transfer& transfer);
  static void OnWritable(uv_poll_t* poll, int status, int events);
  void Finish(Transfer* transfer, int err);
  void Close(Transfer* transfer);

  std::map<uint32_t, Transfer*> transfers_;
  uint32_t nextId_ = 1;
};

}  // namespace trickle
