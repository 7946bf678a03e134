//! One writer at a time per file inside this process: `write` and `edit` of the same file wait
//! for each other, so an edit always reads the content the previous write or edit left.
//!
//! Without this, 24 concurrent edits of one file each read the same original, and each rename
//! dropped the others' changes while every call reported success. Locks are keyed by
//! [`crate::atomic::real_path`], so every spelling of a path (relative, `./`, absolute, through
//! a symlink) takes the same lock. Waiting is async and cancellable; the table only holds
//! entries that are locked or waited for.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

type Table = HashMap<PathBuf, Weak<AsyncMutex<()>>>;

static LOCKS: Mutex<Option<Table>> = Mutex::new(None);

/// Holds the lock on one path; released on drop.
#[derive(Debug)]
pub(crate) struct PathGuard {
    guard: Option<OwnedMutexGuard<()>>,
    key: PathBuf,
}

/// Waits for the lock on `key` (a real path); `None` if `cancel` fired first.
pub(crate) async fn lock(key: PathBuf, cancel: &CancellationToken) -> Option<PathGuard> {
    let mutex = {
        let mut table = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        let table = table.get_or_insert_with(HashMap::new);
        match table.get(&key).and_then(Weak::upgrade) {
            Some(mutex) => mutex,
            None => {
                let mutex = Arc::new(AsyncMutex::new(()));
                table.insert(key.clone(), Arc::downgrade(&mutex));
                mutex
            }
        }
    };
    tokio::select! {
        guard = mutex.lock_owned() => Some(PathGuard { guard: Some(guard), key }),
        () = cancel.cancelled() => {
            forget_if_unused(&key);
            None
        }
    }
}

impl Drop for PathGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        forget_if_unused(&self.key);
    }
}

/// Drops the table entry of `key` once nobody holds or awaits its mutex.
fn forget_if_unused(key: &PathBuf) {
    let mut table = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(table) = table.as_mut()
        && table.get(key).is_some_and(|weak| weak.strong_count() == 0)
    {
        table.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holders_of_one_key_never_overlap_and_the_table_empties() {
        let key = PathBuf::from("/lock-test/one");
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (key, inside, most) = (key.clone(), inside.clone(), most.clone());
                tokio::spawn(async move {
                    let guard = lock(key, &CancellationToken::new()).await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(guard);
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        let table = LOCKS.lock().unwrap();
        assert!(!table.as_ref().unwrap().contains_key(&key), "the entry is dropped with its last guard");
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_can_be_cancelled_and_other_keys_are_independent() {
        let key = PathBuf::from("/lock-test/two");
        let held = lock(key.clone(), &CancellationToken::new()).await.unwrap();
        let other = lock(PathBuf::from("/lock-test/three"), &CancellationToken::new()).await;
        assert!(other.is_some(), "another path is not blocked");
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            canceller.cancel();
        });
        assert!(lock(key.clone(), &cancel).await.is_none());
        drop(held);
        assert!(lock(key, &CancellationToken::new()).await.is_some());
    }
}
