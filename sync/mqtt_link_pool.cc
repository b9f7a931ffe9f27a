#include "sync/mqtt_link_pool.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "store/types.h"

namespace edgesync {

bool TopicMatchesFilter(const std::string& filter, const std::string& topic) {
  size_t f = 0, t = 0;
  while (true) {
    size_t fe = filter.find('/', f);
    std::string_view flevel(filter.data() + f, (fe == std::string::npos ? filter.size() : fe) - f);
    if (flevel == "#") return true;
    if (t > topic.size()) return false;
    size_t te = topic.find('/', t);
    std::string_view tlevel(topic.data() + t, (te == std::string::npos ? topic.size() : te) - t);
    if (flevel != "+" && flevel != tlevel) return false;
    if (fe == std::string::npos || te == std::string::npos) {
      // Both must end here; "a/#" also matches "a" (its parent level).
      if (fe == std::string::npos && te == std::string::npos) return true;
      return te == std::string::npos && filter.compare(fe, std::string::npos, "/#") == 0;
    }
    f = fe + 1;
    t = te + 1;
  }
}

std::string TopicFilterError(const std::string& filter) {
  if (filter.empty()) return "is empty";
  if (filter.size() > 65535) return "is longer than 65535 bytes";
  if (filter.find('\0') != std::string::npos) return "contains a NUL byte";
  if (!IsValidUtf8(filter)) return "is not valid UTF-8";
  size_t start = 0;
  while (true) {
    const size_t slash = filter.find('/', start);
    const bool last = slash == std::string::npos;
    std::string_view level(filter.data() + start, (last ? filter.size() : slash) - start);
    if (level.find_first_of("+#") != std::string_view::npos && level.size() != 1) {
      return "a wildcard must fill its whole level";
    }
    if (level == "#" && !last) return "'#' must be the last level";
    if (last) return "";
    start = slash + 1;
  }
}

std::string BoundClientId(const MqttLinkOptions& options, const std::string& certificate_identity) {
  if (!options.credentials_file.empty()) {
    std::string user, password;
    if (ReadCredentialsFile(options.credentials_file, &user, &password).ok()) return user;
    return "";  // NewPahoMqttLink reports the file
  }
  if (!options.cert_file.empty()) return certificate_identity;
  return "";
}

namespace {

class PooledLink;

}  // namespace

// One connection and the views sharing it. The real link's handlers hold a
// raw pointer to this: link is declared last, so it is destroyed (its
// threads joined) first.
struct MqttLinkPool::Shared {
  // A view's state, kept here so that the connection's mutex guards it.
  struct View {
    const PooledLink* link;
    MqttLink::MessageHandler message_handler;
    MqttLink::StateHandler state_handler;
    std::vector<std::string> filters;
    bool started = false;
    bool disconnected = false;  // by Disconnect, until the next Start

    // Also before Start: a retained message answers the SUBACK of a view
    // subscribing on a connection already up.
    bool Wants(const std::string& topic) const {
      if (disconnected || !message_handler) return false;
      for (const std::string& f : filters) {
        if (TopicMatchesFilter(f, topic)) return true;
      }
      return false;
    }
  };

  Mutex mu;  // held while handlers run
  std::vector<View> views GUARDED_BY(mu);       // in the order they were opened
  std::map<std::string, int> filters GUARDED_BY(mu);  // subscribed filter -> views holding it
  int started GUARDED_BY(mu) = 0;
  bool connected GUARDED_BY(mu) = false;
  // Set by Open before any view exists, never replaced: used without mu.
  std::unique_ptr<MqttLink> link;

  View& ViewOf(const PooledLink* link) REQUIRES(mu) {
    return *std::find_if(views.begin(), views.end(), [link](const View& v) { return v.link == link; });
  }
  void OnMessage(MqttMessage&& m) EXCLUDES(mu);
  void OnState(bool connected, bool session_present, const std::string& why) EXCLUDES(mu);
};

namespace {

// A view: its state lives in shared_->views (under shared_->mu).
class PooledLink final : public MqttLink {
 public:
  explicit PooledLink(std::shared_ptr<MqttLinkPool::Shared> shared) : shared_(std::move(shared)) {
    MutexLock lock(&shared_->mu);
    shared_->views.push_back(MqttLinkPool::Shared::View{this, {}, {}, {}, false, false});
  }
  ~PooledLink() override {
    Disconnect(2000);
    MutexLock lock(&shared_->mu);
    for (const std::string& f : shared_->ViewOf(this).filters) {
      if (--shared_->filters[f] == 0) shared_->filters.erase(f);
    }
    auto& v = shared_->views;
    v.erase(std::remove_if(v.begin(), v.end(), [this](const auto& view) { return view.link == this; }), v.end());
  }

  void SetMessageHandler(MessageHandler handler) override {
    MutexLock lock(&shared_->mu);
    shared_->ViewOf(this).message_handler = std::move(handler);
  }
  void SetStateHandler(StateHandler handler) override {
    MutexLock lock(&shared_->mu);
    shared_->ViewOf(this).state_handler = std::move(handler);
  }

  Status Subscribe(const std::string& filter, int qos) override {
    {
      MutexLock lock(&shared_->mu);
      std::vector<std::string>& filters = shared_->ViewOf(this).filters;
      if (std::find(filters.begin(), filters.end(), filter) == filters.end()) {
        filters.push_back(filter);
        ++shared_->filters[filter];
      }
    }
    // Not under the lock: the SUBACK wait would hold up the receive thread.
    return shared_->link->Subscribe(filter, qos);
  }
  Status Unsubscribe(const std::string& filter) override {
    bool last = false;
    {
      MutexLock lock(&shared_->mu);
      std::vector<std::string>& filters = shared_->ViewOf(this).filters;
      auto it = std::find(filters.begin(), filters.end(), filter);
      if (it == filters.end()) return Status::Ok();
      filters.erase(it);
      last = --shared_->filters[filter] == 0;
      if (last) shared_->filters.erase(filter);
    }
    return last ? shared_->link->Unsubscribe(filter) : Status::Ok();
  }

  Status Start() override {
    bool first = false;
    {
      MutexLock lock(&shared_->mu);
      MqttLinkPool::Shared::View& view = shared_->ViewOf(this);
      if (view.started) return Status::Ok();
      view.started = true;
      view.disconnected = false;
      first = shared_->started++ == 0;
      // Joining a connection that is up: the view hears of it as its own.
      if (!first && shared_->connected && view.state_handler) view.state_handler(true, true, "");
    }
    return first ? shared_->link->Start() : Status::Ok();
  }
  Status Connect(int64_t timeout_ms) override {
    ES_RETURN_IF_ERROR(Start());
    return WaitConnected(timeout_ms) ? Status::Ok() : Status::Unavailable("mqtt: not connected in time");
  }
  bool WaitConnected(int64_t timeout_ms) override { return shared_->link->WaitConnected(timeout_ms); }
  bool connected() const override { return shared_->link->connected(); }
  Status Disconnect(int64_t timeout_ms) override {
    {
      MutexLock lock(&shared_->mu);
      MqttLinkPool::Shared::View& view = shared_->ViewOf(this);
      view.disconnected = true;
      if (!view.started) return Status::Ok();
      view.started = false;
      if (--shared_->started > 0) return Status::Ok();
    }
    return shared_->link->Disconnect(timeout_ms);
  }
  void Pause() override { shared_->link->Pause(); }
  void Resume() override { shared_->link->Resume(); }
  bool paused() const override { return shared_->link->paused(); }
  Status Publish(const std::string& topic, const std::string& payload, int qos, bool retained, int64_t wait_ms,
                 PublishDone done) override {
    return shared_->link->Publish(topic, payload, qos, retained, wait_ms, std::move(done));
  }
  Status Flush(int64_t timeout_ms) override { return shared_->link->Flush(timeout_ms); }
  int inflight() const override { return shared_->link->inflight(); }
  Counters counters() const override { return shared_->link->counters(); }

 private:
  std::shared_ptr<MqttLinkPool::Shared> shared_;
};

}  // namespace

void MqttLinkPool::Shared::OnMessage(MqttMessage&& m) {
  MutexLock lock(&mu);
  View* last = nullptr;
  for (View& v : views) {
    if (!v.Wants(m.topic)) continue;
    if (last != nullptr) last->message_handler(MqttMessage(m));
    last = &v;
  }
  if (last != nullptr) last->message_handler(std::move(m));
}

void MqttLinkPool::Shared::OnState(bool up, bool session_present, const std::string& why) {
  MutexLock lock(&mu);
  connected = up;
  for (View& v : views) {
    if (v.started && v.state_handler) v.state_handler(up, session_present, why);
  }
}

MqttLinkPool::MqttLinkPool(Factory factory) : factory_(std::move(factory)) {
  if (!factory_) factory_ = NewPahoMqttLink;
}

MqttLinkPool::~MqttLinkPool() = default;

Status MqttLinkPool::Open(const MqttLinkOptions& options, std::unique_ptr<MqttLink>* link) {
  MutexLock lock(&mu_);
  const std::string key = options.uri + '\n' + options.client_id;
  std::shared_ptr<Shared> shared = shared_[key].lock();
  if (!shared) {
    shared = std::make_shared<Shared>();
    ES_RETURN_IF_ERROR(factory_(options, &shared->link));
    Shared* s = shared.get();
    shared->link->SetMessageHandler([s](MqttMessage&& m) { s->OnMessage(std::move(m)); });
    shared->link->SetStateHandler(
        [s](bool up, bool session_present, const std::string& why) { s->OnState(up, session_present, why); });
    shared_[key] = shared;
  }
  *link = std::make_unique<PooledLink>(std::move(shared));
  return Status::Ok();
}

std::function<Status(const MqttLinkOptions&, std::unique_ptr<MqttLink>*)> IdentityBoundLinks(
    const std::string& certificate_identity, MqttLinkPool::Factory factory) {
  auto pool = std::make_shared<MqttLinkPool>(std::move(factory));
  return [pool, certificate_identity](const MqttLinkOptions& options, std::unique_ptr<MqttLink>* link) {
    MqttLinkOptions bound = options;
    std::string id = BoundClientId(options, certificate_identity);
    if (!id.empty()) bound.client_id = id;
    return pool->Open(bound, link);
  };
}

}  // namespace edgesync
