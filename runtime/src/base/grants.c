/* SPDX-License-Identifier: Apache-2.0 */
/* The bindings' grants (see binding_api/grants.h): ledger entries tagged
 * with the resource's identity. */
#include <stdlib.h>

#include "grants.h"
#include "ledger.h"

struct cmr_grant {
  cmr_ledger_entry entry;
};

static cmr_ledger cmr_grants;
CMR_SHARE_LEDGERS(grants, &cmr_grants, 1) /* a fork holds its locks too */

cmr_status cmr_grant_record(const void *owner, void *address, size_t bytes) {
  return cmr_ledger_add(&cmr_grants, "allocate", address, owner, bytes);
}

cmr_status cmr_grant_take(const void *owner, const void *address, size_t bytes, cmr_grant **out, size_t *granted) {
  cmr_ledger_entry *entry = NULL;
  cmr_status status = cmr_ledger_take(&cmr_grants, owner, address, bytes, &entry, granted);
  *out = (cmr_grant *)entry; /* its first and only member */
  return status;
}

void cmr_grant_put_back(cmr_grant *grant) { cmr_ledger_put_back(&cmr_grants, &grant->entry); }

void cmr_grant_discard(cmr_grant *grant) { cmr_ledger_discard(&cmr_grants, &grant->entry); }
