// store/dead_letter_table.h: messages ingest could not take (table
// `dead_letters`): when, the topic, the first bytes of the payload and why,
// for `edgesync dead-letters`. Bounded: only the newest `cap` are kept; the
// count of every letter ever added lives in meta "dead_letters".
//
// Thread safety: no state of its own. Each call runs on the connection it
// is given; the caller holds that connection's mutex.
#ifndef EDGESYNC_STORE_DEAD_LETTER_TABLE_H_
#define EDGESYNC_STORE_DEAD_LETTER_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {
namespace dead_letter_table {

// In one transaction of its own: adds the letters (topic and reason cut at
// 1 KiB, the payload's head at 256 bytes), drops all but the newest `cap`
// and counts them in meta "dead_letters".
Status Add(Db* db, const std::vector<DeadLetter>& letters, int64_t cap);
// The newest `max`, newest first.
Status List(Db* db, size_t max, std::vector<DeadLetter>* letters);

}  // namespace dead_letter_table
}  // namespace edgesync

#endif  // EDGESYNC_STORE_DEAD_LETTER_TABLE_H_
