//! One speaker: utterances play one at a time, in arrival order, at most [`MAX_WAITING`]
//! waiting; `interrupt` stops the one playing and every one waiting.
//!
//! Each call takes the current *round* (a cancellation token) when it starts; an interrupt
//! cancels the round and opens a new one, so everything that started before it (synthesising,
//! waiting or playing) stops and answers "Speak canceled", and the interrupting call plays next.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

/// Utterances that may wait for the speaker at once; one more is refused (bounded memory and
/// an agent that floods gets told, instead of minutes of queued speech).
pub const MAX_WAITING: usize = 8;

#[derive(Default)]
pub struct Speaker {
    round: Mutex<CancellationToken>,
    turn: tokio::sync::Mutex<()>,
    waiting: AtomicUsize,
    speaking: AtomicBool,
}

/// Why a call did not get the speaker.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// [`MAX_WAITING`] are waiting already.
    Full,
    /// Its round was interrupted, or its call cancelled, while it waited.
    Stopped,
}

/// The speaker, held while one utterance plays.
pub struct Turn<'a> {
    speaker: &'a Speaker,
    _turn: tokio::sync::MutexGuard<'a, ()>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.speaker.speaking.store(false, Ordering::SeqCst);
    }
}

impl Speaker {
    /// The round a call belongs to; `interrupt` first stops everything before it.
    pub fn join(&self, interrupt: bool) -> CancellationToken {
        let mut round = self.round.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if interrupt {
            round.cancel();
            *round = CancellationToken::new();
        }
        round.clone()
    }

    /// Waits for the speaker (bounded: [`MAX_WAITING`]); stops waiting when `stop` fires.
    pub async fn take_turn(&self, stop: &CancellationToken) -> Result<Turn<'_>, Refused> {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(Refused::Full);
        }
        let got = tokio::select! {
            guard = self.turn.lock() => Some(guard),
            _ = stop.cancelled() => None,
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        let guard = got.ok_or(Refused::Stopped)?;
        // The round may have been interrupted in the same instant the turn came free.
        if stop.is_cancelled() {
            return Err(Refused::Stopped);
        }
        self.speaking.store(true, Ordering::SeqCst);
        Ok(Turn { speaker: self, _turn: guard })
    }

    pub fn is_speaking(&self) -> bool {
        self.speaking.load(Ordering::SeqCst)
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

/// A token that fires when either of two does (a call's cancellation or its round's
/// interrupt); its watcher task ends when this is dropped.
pub struct Either {
    pub token: CancellationToken,
    _guard: tokio_util::sync::DropGuard,
}

pub fn either(a: &CancellationToken, b: &CancellationToken) -> Either {
    let token = CancellationToken::new();
    let (a, b, fire) = (a.clone(), b.clone(), token.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = a.cancelled() => {}
            _ = b.cancelled() => {}
            _ = fire.cancelled() => {}
        }
        fire.cancel();
    });
    Either { _guard: token.clone().drop_guard(), token }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_most_max_waiting_wait_and_an_interrupt_stops_them_all() {
        let speaker = std::sync::Arc::new(Speaker::default());
        let round = speaker.join(false);
        let turn = speaker.take_turn(&round).await.unwrap();
        assert!(speaker.is_speaking());
        let mut waiters = Vec::new();
        for _ in 0..MAX_WAITING {
            let (speaker, round) = (speaker.clone(), round.clone());
            waiters.push(tokio::spawn(async move { speaker.take_turn(&round).await.map(drop) }));
        }
        while speaker.waiting() < MAX_WAITING {
            tokio::task::yield_now().await;
        }
        assert_eq!(speaker.take_turn(&round).await.err(), Some(Refused::Full), "one more than MAX_WAITING");
        let next = speaker.join(true);
        assert!(round.is_cancelled() && !next.is_cancelled(), "an interrupt opens a new round");
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), Err(Refused::Stopped));
        }
        drop(turn);
        assert!(!speaker.is_speaking());
        assert!(speaker.take_turn(&next).await.is_ok(), "the interrupting call speaks next");
    }
}
