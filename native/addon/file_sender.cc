#include "file_sender.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "errors.h"

namespace trickle {

// One descriptor of a file, shared by the transfers that read it; closed with the last of them.
struct FileSender::OpenFile {
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;
  OpenFile() = default;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() {
    if (fd >= 0) close(fd);
  }
};

struct FileSender::Transfer {
  FileSender* owner = nullptr;
  uint32_t id = 0;
  napi_env env = nullptr;
  // A duplicate of the socket's fd: Node may close its own at any time (the client left), and
  // the number could then name another file. Closed with the transfer.
  int socketFd = -1;
  std::shared_ptr<OpenFile> file;
  // The write under way: where it is, what is left, what it has sent and in how many calls.
  off_t offset = 0;
  uint64_t remaining = 0;
  uint64_t writeSent = 0;
  uint32_t writeCalls = 0;
  // Bytes sent over the transfer's life.
  uint64_t sent = 0;
  // Watched only once a write finds the socket full; kept for the transfer's later writes.
  bool pollInitialized = false;
  uv_poll_t poll{};
  Napi::FunctionReference callback;
  std::unique_ptr<Napi::AsyncContext> context;
};

namespace {
// Largest count one sendfile call takes (the kernel's own cap).
constexpr uint64_t kMaxSendfileBytes = 0x7ffff000;
// A file shorter than the range it was described with (replaced or truncated since).
constexpr int kFileShort = -1;

// Descriptors kept free for new connections: a transfer's duplicate is refused (EMFILE, and Node
// writes that response) once fewer than this many are left, so an origin near its limit still
// accepts viewers instead of resetting them.
uint64_t ReservedDescriptors(uint64_t limit) { return std::max<uint64_t>(64, limit / 16); }

// The process's descriptor limit (the soft one, which open and accept obey).
uint64_t DescriptorLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return limit.rlim_cur;
}

Napi::Error TransferError(Napi::Env env, int err) {
  if (err == kFileShort) {
    Napi::Error error = Napi::Error::New(
        env, "sendfile: the file ended before the range (replaced or truncated since it was described)");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_FILE_SHORT"));
    return error;
  }
  return SyscallError(env, "sendfile", err);
}
}  // namespace

FileSender::~FileSender() {
  for (auto& [id, transfer] : transfers_) {
    transfer->callback.Reset();
    transfer->context.reset();
    Release(transfer);
  }
  transfers_.clear();
}

int FileSender::Pump(Transfer& transfer) {
  while (transfer.remaining > 0) {
    const uint64_t asked = std::min(transfer.remaining, kMaxSendfileBytes);
    ssize_t n = sendfile(transfer.socketFd, transfer.file->fd, &transfer.offset, asked);
    if (n > 0) {
      transfer.writeCalls++;
      transfer.remaining -= static_cast<uint64_t>(n);
      transfer.writeSent += static_cast<uint64_t>(n);
      transfer.sent += static_cast<uint64_t>(n);
      // A short count means the socket is full: wait for room rather than ask again for EAGAIN.
      // (A file that ended early shows on the next call, which returns 0.)
      if (static_cast<uint64_t>(n) < asked && transfer.remaining > 0) return EAGAIN;
      continue;
    }
    if (n == 0) return kFileShort;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? EAGAIN : errno;
  }
  return 0;
}

std::shared_ptr<FileSender::OpenFile> FileSender::FileAt(Napi::Env env, const std::string& path, uint64_t endOffset) {
  // stat, not the open descriptor's fstat: a file replaced under the path (a new inode) gets a new
  // descriptor, and one truncated in place shows its new size either way.
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) throw SyscallError(env, "open", errno, path);
  if (static_cast<uint64_t>(info.st_size) < endOffset) throw TransferError(env, kFileShort);
  auto found = files_.find(path);
  if (found != files_.end()) {
    std::shared_ptr<OpenFile> shared = found->second.lock();
    if (shared && shared->device == info.st_dev && shared->inode == info.st_ino) return shared;
  }
  auto file = std::make_shared<OpenFile>();
  file->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file->fd < 0) throw SyscallError(env, "open", errno, path);
  struct stat opened {};
  if (fstat(file->fd, &opened) != 0) throw SyscallError(env, "fstat", errno, path);
  // Replaced between the stat and the open: the size checked was the old file's.
  if (static_cast<uint64_t>(opened.st_size) < endOffset) throw TransferError(env, kFileShort);
  file->device = opened.st_dev;
  file->inode = opened.st_ino;
  file->path = path;
  files_[path] = file;
  return file;
}

double FileSender::Open(Napi::Env env, int socketFd, const std::string& path, uint64_t endOffset) {
  std::shared_ptr<OpenFile> file = FileAt(env, path, endOffset);
  int dupFd = fcntl(socketFd, F_DUPFD_CLOEXEC, 0);
  if (dupFd < 0) throw SyscallError(env, "fcntl", errno, "F_DUPFD_CLOEXEC of the socket");
  // The lowest free number: every descriptor below it is open, so at most limit - dupFd are free.
  const uint64_t limit = DescriptorLimit();
  if (limit != UINT64_MAX && static_cast<uint64_t>(dupFd) + ReservedDescriptors(limit) >= limit) {
    close(dupFd);
    throw SyscallError(env, "fcntl", EMFILE, "F_DUPFD_CLOEXEC of the socket: descriptors kept for new connections");
  }
  auto transfer = std::make_unique<Transfer>();
  transfer->socketFd = dupFd;
  transfer->file = std::move(file);
  transfer->owner = this;
  transfer->env = env;
  transfer->id = nextId_++;
  if (nextId_ == 0) nextId_ = 1;
  Transfer* raw = transfer.release();
  transfers_[raw->id] = raw;
  return static_cast<double>(raw->id);
}

double FileSender::Write(Napi::Env env, uint32_t id, uint64_t offset, uint64_t length, Napi::Function callback) {
  auto found = transfers_.find(id);
  if (found == transfers_.end()) throw ArgumentError(env, "no open file transfer " + std::to_string(id));
  Transfer& transfer = *found->second;
  if (!transfer.callback.IsEmpty())
    throw ArgumentError(env, "file transfer " + std::to_string(id) + " is still writing");
  transfer.offset = static_cast<off_t>(offset);
  transfer.remaining = length;
  transfer.writeSent = 0;
  transfer.writeCalls = 0;
  int err = Pump(transfer);
  if (err == 0) return static_cast<double>(transfer.writeCalls);
  if (err != EAGAIN) throw TransferError(env, err);
  if (!transfer.pollInitialized) {
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || uv_poll_init(loop, &transfer.poll, transfer.socketFd) != 0) {
      throw SyscallError(env, "uv_poll_init", EINVAL, "watching the socket for room");
    }
    transfer.poll.data = &transfer;
    transfer.pollInitialized = true;
  }
  transfer.callback = Napi::Persistent(callback);
  transfer.context = std::make_unique<Napi::AsyncContext>(env, "trickle:fileSend");
  uv_poll_start(&transfer.poll, UV_WRITABLE | UV_DISCONNECT, OnWritable);
  return -1;
}

void FileSender::OnWritable(uv_poll_t* poll, int status, int events) {
  Transfer* transfer = static_cast<Transfer*>(poll->data);
  FileSender* owner = transfer->owner;
  if (owner == nullptr) return;
  (void)status;
  (void)events;
  // An error on the socket (a reset) shows as this sendfile's errno.
  int err = Pump(*transfer);
  if (err == EAGAIN) return;
  uv_poll_stop(poll);
  owner->Finish(transfer, err);
}

void FileSender::Finish(Transfer* transfer, int err) {
  Napi::Env env(transfer->env);
  Napi::FunctionReference callback = std::move(transfer->callback);
  std::unique_ptr<Napi::AsyncContext> context = std::move(transfer->context);
  Napi::HandleScope scope(env);
  Napi::Value error = err == 0 ? env.Null() : TransferError(env, err).Value();
  try {
    callback.MakeCallback(env.Global(),
                          {error, Napi::Number::New(env, static_cast<double>(transfer->writeSent)),
                           Napi::Number::New(env, transfer->writeCalls)},
                          *context);
  } catch (const Napi::Error& thrown) {
    // No JavaScript frame to throw into: the process's uncaught exception handling takes it.
    napi_fatal_exception(env, thrown.Value());
  }
}

void FileSender::Release(Transfer* transfer) {
  transfer->owner = nullptr;
  const int socketFd = transfer->socketFd;
  // The file now (the transfer's memory may outlive this until the loop closes its handle).
  transfer->file.reset();
  if (transfer->pollInitialized) {
    // uv_close takes the fd out of the loop's epoll at once; only then may its number be reused.
    // The handle's memory must outlive the loop's close: its close callback frees it.
    uv_close(reinterpret_cast<uv_handle_t*>(&transfer->poll),
             [](uv_handle_t* handle) { delete static_cast<Transfer*>(handle->data); });
  } else {
    delete transfer;
  }
  if (socketFd >= 0) close(socketFd);
}

double FileSender::Close(uint32_t id) {
  auto found = transfers_.find(id);
  if (found == transfers_.end()) return -1;
  Transfer* transfer = found->second;
  const double sent = static_cast<double>(transfer->sent);
  const std::string path = transfer->file->path;
  transfers_.erase(found);
  transfer->callback.Reset();
  transfer->context.reset();
  Release(transfer);
  auto file = files_.find(path);
  if (file != files_.end() && file->second.expired()) files_.erase(file);
  return sent;
}

}  // namespace trickle
