// Shard leases in PostgreSQL (store/hub_store_leases.h).
//
// Tables (pg_hub_store.cc's schema 2):
//   es_hubs(id, instance, expires_at): one row per hub id; the instance
//     token tells two processes under one id apart.
//   es_shard_leases(shard, owner, expires_at, version): owner '' = free.
// Every expiry is computed and compared by the server: clock_timestamp() +
// the ttl. A round is one transaction; a take uses FOR UPDATE SKIP LOCKED (two
// hubs taking at once take different shards), a steal a compare-and-set on
// the version (the owner may have renewed or released meanwhile).
#include <algorithm>
#include <map>
#include <random>

#include "store/hub_store_leases.h"
#include "store/pg/pg_conn.h"

namespace edgesync {
namespace {

std::string RandomInstance() {
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) out += kHex[rd() % 16];
  return out;
}

class PgShardLeases : public ShardLeases {
 public:
  PgShardLeases(std::unique_ptr<PgConn> conn, ShardLeaseOptions options)
      : conn_(std::move(conn)),
        options_(std::move(options)),
        instance_(options_.instance.empty() ? RandomInstance() : options_.instance),
        ttl_(std::to_string(options_.ttl_ms)) {}

  Status Join() override {
    return InTransaction([&]() -> Status {
      ES_RETURN_IF_ERROR(conn_->Query(
          "INSERT INTO es_shard_leases(shard) SELECT generate_series(0, $1::int - 1) ON CONFLICT DO NOTHING",
          {std::to_string(options_.shards)}));
      PgResult r;
      ES_RETURN_IF_ERROR(conn_->Query(
          "INSERT INTO es_hubs(id, instance, expires_at) VALUES ($1, $2, clock_timestamp() + $3 * interval '1 ms') "
          "ON CONFLICT (id) DO UPDATE SET instance = EXCLUDED.instance, expires_at = EXCLUDED.expires_at "
          "WHERE es_hubs.expires_at <= clock_timestamp() OR es_hubs.instance = EXCLUDED.instance RETURNING id",
          {options_.hub_id, instance_, ttl_}, &r));
      if (r.rows() == 0) {
        return Status::Conflict("hub id '" + options_.hub_id +
                                "' is held by another running hub of this region; give every hub its own [hub] id "
                                "(a killed hub's id is free again after the lease time)");
      }
      return Status::Ok();
    });
  }

  Status Balance(std::vector<int>* owned, ShardLeaseStats* stats) override {
    *stats = ShardLeaseStats{};
    owned->clear();
    Status st = InTransaction([&]() -> Status {
      PgResult m;
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_hubs SET expires_at = clock_timestamp() + $3 * interval '1 ms' WHERE id = $1 AND instance = $2",
          {options_.hub_id, instance_, ttl_}, &m));
      if (m.affected() == 0) {
        return Status::Rejected("hub '" + options_.hub_id +
                                "' lost its membership (it was not renewed in time and another process took the id)");
      }
      PgResult r;
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_shard_leases SET expires_at = clock_timestamp() + $2 * interval '1 ms' WHERE owner = $1 "
          "RETURNING shard",
          {options_.hub_id, ttl_}, &r));
      for (int i = 0; i < r.rows(); ++i) owned->push_back(static_cast<int>(r.Int(i, 0)));
      PgResult live;
      ES_RETURN_IF_ERROR(conn_->Query("SELECT count(*) FROM es_hubs WHERE expires_at > clock_timestamp()", {}, &live));
      const int hubs = std::max<int>(1, static_cast<int>(live.Int(0, 0)));
      stats->live_hubs = hubs;
      const int ceil_share = (options_.shards + hubs - 1) / hubs;
      const int floor_share = options_.shards / hubs;
      const int mine = static_cast<int>(owned->size());
      if (mine < ceil_share) {
        PgResult t;
        ES_RETURN_IF_ERROR(conn_->Query(
            "UPDATE es_shard_leases SET owner = $1, expires_at = clock_timestamp() + $2 * interval '1 ms', "
            "version = version + 1 WHERE shard IN (SELECT shard FROM es_shard_leases WHERE shard < $4 AND "
            "(owner = '' OR expires_at <= clock_timestamp()) ORDER BY shard LIMIT $3 FOR UPDATE SKIP LOCKED) "
            "RETURNING shard",
            {options_.hub_id, ttl_, std::to_string(ceil_share - mine), std::to_string(options_.shards)}, &t));
        for (int i = 0; i < t.rows(); ++i) owned->push_back(static_cast<int>(t.Int(i, 0)));
        stats->taken = t.rows();
      }
      if (static_cast<int>(owned->size()) < floor_share) ES_RETURN_IF_ERROR(Steal(floor_share, owned, stats));
      return Status::Ok();
    });
    std::sort(owned->begin(), owned->end());
    if (!st.ok()) owned->clear();
    return st;
  }

  Status Release() override {
    return InTransaction([&]() -> Status {
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_shard_leases SET owner = '', expires_at = '-infinity', version = version + 1 WHERE owner = $1 "
          "AND EXISTS (SELECT 1 FROM es_hubs WHERE id = $1 AND instance = $2)",
          {options_.hub_id, instance_}));
      return conn_->Query("DELETE FROM es_hubs WHERE id = $1 AND instance = $2", {options_.hub_id, instance_});
    });
  }

 private:
  // Takes shards from the busiest live holders, one at a time, until this hub
  // holds `floor_share` or nobody holds more than that.
  Status Steal(int floor_share, std::vector<int>* owned, ShardLeaseStats* stats) {
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query(
        "SELECT shard, owner, version FROM es_shard_leases WHERE owner <> '' AND owner <> $1 AND shard < $2 "
        "AND expires_at > clock_timestamp() ORDER BY owner, shard",
        {options_.hub_id, std::to_string(options_.shards)}, &r));
    std::map<std::string, std::vector<std::pair<int, int64_t>>> held;  // owner -> (shard, version)
    for (int i = 0; i < r.rows(); ++i) held[r.Text(i, 1)].push_back({static_cast<int>(r.Int(i, 0)), r.Int(i, 2)});
    while (static_cast<int>(owned->size()) < floor_share) {
      auto busiest = std::max_element(held.begin(), held.end(),
                                      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
      if (busiest == held.end() || static_cast<int>(busiest->second.size()) <= floor_share) break;
      auto [shard, version] = busiest->second.back();
      busiest->second.pop_back();
      PgResult u;
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_shard_leases SET owner = $1, expires_at = clock_timestamp() + $2 * interval '1 ms', "
          "version = version + 1 WHERE shard = $3 AND owner = $4 AND version = $5",
          {options_.hub_id, ttl_, std::to_string(shard), busiest->first, std::to_string(version)}, &u));
      if (u.affected() == 1) {
        owned->push_back(shard);
        ++stats->stolen;
      }
    }
    return Status::Ok();
  }

  template <typename F>
  Status InTransaction(F body) {
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    ES_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    Status st = body();
    if (!st.ok()) {
      conn_->Rollback();
      return st;
    }
    return conn_->Exec("COMMIT");
  }

  std::unique_ptr<PgConn> conn_;
  ShardLeaseOptions options_;
  std::string instance_;
  std::string ttl_;  // milliseconds, as the queries take it
};

}  // namespace

Status OpenPostgresShardLeases(const HubStoreOptions& options, const ShardLeaseOptions& lease_options,
                               std::unique_ptr<ShardLeases>* leases) {
  if (lease_options.hub_id.empty()) return Status::InvalidArgument("shard leases: the hub needs an id");
  if (lease_options.shards < 1 || lease_options.ttl_ms < 1) return Status::InvalidArgument("shard leases: bad options");
  std::unique_ptr<PgConn> conn;
  HubStoreOptions o = options;
  o.application_name += "-leases";
  ES_RETURN_IF_ERROR(ConnectPostgres(o, &conn));
  *leases = std::make_unique<PgShardLeases>(std::move(conn), lease_options);
  return Status::Ok();
}

}  // namespace edgesync
