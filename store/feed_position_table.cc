// The feed positions of a gateway store's read view: store/feed_position_table.h.
#include "store/feed_position_table.h"

#include <algorithm>

#include "store/checkpoint_names.h"
#include "store/feed_cursor.h"
#include "store/token.h"

namespace edgesync {
namespace feed_position_table {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string Hex(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

Status Unhex(const std::string& text, std::string* bytes) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return Status::Corruption("feed position: odd hex length");
  bytes->clear();
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return Status::Corruption("feed position: not hex");
    bytes->push_back(static_cast<char>(hi << 4 | lo));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRegion(const std::string& region) {
  if (region.empty() || region.size() > 64) return Status::InvalidArgument("feed position: region name 1..64 bytes");
  return Status::Ok();
}

Status Read(Db* db, const std::string& region, FeedPosition* position) {
  *position = FeedPosition{};
  Stmt m;
  ES_RETURN_IF_ERROR(m.Prepare(db, "SELECT key, value FROM meta WHERE key IN (?, ?)"));
  std::string epoch_key = "feed_epoch:" + region, shards_key = "feed_shards:" + region;
  m.Bind(1, std::string_view(epoch_key));
  m.Bind(2, std::string_view(shards_key));
  Status st;
  bool have_shards = false;
  std::string epoch, shards;
  while (m.Step(&st)) {
    if (m.Text(0) == epoch_key) {
      epoch = m.Text(1);
    } else {
      shards = m.Text(1);
      have_shards = true;
    }
  }
  ES_RETURN_IF_ERROR(st);
  if (have_shards) {
    std::string bytes;
    ES_RETURN_IF_ERROR(Unhex(shards, &bytes).Annotate("region " + region));
    ES_RETURN_IF_ERROR(DecodeShardPositions(bytes, &position->shards).Annotate("feed position of region " + region));
    position->epoch = epoch;
    return Status::Ok();
  }
  // Only the single-sequence position of an older store (or nothing).
  Stmt c;
  ES_RETURN_IF_ERROR(c.Prepare(db, "SELECT value FROM checkpoints WHERE name=?"));
  std::string name = checkpoint::FeedOf(region);
  c.Bind(1, std::string_view(name));
  position->single_seq = c.Step(&st) ? static_cast<uint64_t>(c.Int(0)) : 0;
  return st;
}

Status Write(Db* db, const std::string& region, const FeedPosition& position, bool reset) {
  ES_RETURN_IF_ERROR(ValidateRegion(region));
  if (!IsEpoch(position.epoch)) return Status::InvalidArgument("feed position: epoch is not 32 lower-case hex");
  for (uint64_t p : position.shards) {
    if (p > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("feed position: seq too large");
  }
  FeedPosition held;
  ES_RETURN_IF_ERROR(Read(db, region, &held));
  // Within one epoch no shard moves back, unless the hub said reset.
  if (!reset && held.epoch == position.epoch && !AllAtOrBelow(held.shards, position.shards)) {
    return Status::InvalidArgument("feed position of " + region + " would move back from " +
                                   ShardPositionsText(held.shards) + " to " + ShardPositionsText(position.shards) +
                                   " within one epoch");
  }
  Stmt put;
  ES_RETURN_IF_ERROR(put.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?), (?, ?)"));
  std::string epoch_key = "feed_epoch:" + region, shards_key = "feed_shards:" + region;
  std::string shards = Hex(EncodeShardPositions(position.shards));
  put.Bind(1, std::string_view(epoch_key));
  put.Bind(2, std::string_view(position.epoch));
  put.Bind(3, std::string_view(shards_key));
  put.Bind(4, std::string_view(shards));
  ES_RETURN_IF_ERROR(put.Run());
  Stmt put_seq;
  ES_RETURN_IF_ERROR(put_seq.Prepare(db, "INSERT OR REPLACE INTO checkpoints(name, value) VALUES(?, ?)"));
  std::string name = checkpoint::FeedOf(region);
  put_seq.Bind(1, std::string_view(name));
  put_seq.Bind(2, static_cast<int64_t>(*std::max_element(position.shards.begin(), position.shards.end())));
  return put_seq.Run();
}

}  // namespace feed_position_table
}  // namespace edgesync
