#pragma once
#include <napi.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace trickle {

// Responses written by sendfile(2) from the file's page cache into the socket, driven by the
// socket's writability on the event loop: no user-space copy, no JavaScript per chunk. A transfer
// holds the file and a duplicate of the socket for a whole response, so each write of it (a block
// of a paced response) is one or two sendfile calls and nothing else. Transfers of one file share
// its descriptor while it is the same file (sendfile reads at the transfer's own offset): thousands
// of viewers of one segment or MP4 hold one descriptor for it, not one each. Owned by one addon
// instance (no static globals); transfers left at teardown are closed without callback.
class FileSender {
 public:
  FileSender() = default;
  FileSender(const FileSender&) = delete;
  FileSender& operator=(const FileSender&) = delete;
  ~FileSender();

  // Opens `path` for a response into the socket `socketFd` whose ranges end before `endOffset`:
  // a transfer id (> 0). Throws NATIVE_ERR_FILE_SHORT when the file is shorter than that (replaced
  // or truncated since it was described), a syscall error when it cannot be opened.
  double Open(Napi::Env env, int socketFd, const std::string& path, uint64_t endOffset);
  // Writes `length` bytes from `offset` (non-blocking). When every byte was taken at once: the
  // sendfile calls that took them (>= 0; the callback is then never called). Otherwise -1, and
  // `callback(error | null, sentBytes, sendfileCalls)` once the bytes are taken or it fails. One
  // write at a time per transfer.
  double Write(Napi::Env env, uint32_t id, uint64_t offset, uint64_t length, Napi::Function callback);
  // Ends a transfer: a write under way stops without its callback (the client left), the file and
  // the socket's duplicate are closed. Returns the bytes sent over its life, or -1 for an unknown id.
  double Close(uint32_t id);

 private:
  struct Transfer;
  struct OpenFile;
  // The open file at `path` if it is still the file there now (same device and inode), else a new one.
  std::shared_ptr<OpenFile> FileAt(Napi::Env env, const std::string& path, uint64_t endOffset);
  // sendfile until the socket is full, the range is sent, or an error: 0 done, EAGAIN wait, else errno.
  static int Pump(Transfer& transfer);
  static void OnWritable(uv_poll_t* poll, int status, int events);
  void Finish(Transfer* transfer, int err);
  static void Release(Transfer* transfer);

  std::map<uint32_t, Transfer*> transfers_;
  // Files open for transfers, by path; an entry goes once its last transfer closes.
  std::map<std::string, std::weak_ptr<OpenFile>> files_;
  uint32_t nextId_ = 1;
};

}  // namespace trickle
