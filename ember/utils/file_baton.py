"""``FileBaton``: a lock between processes made of a file created exclusively (the cpp_extension
builders' lock, as ``torch.utils.file_baton``)."""
import os
import time
import warnings


class FileBaton:
    """A primitive, file-based synchronization utility: whoever creates ``lock_file_path``
    holds the baton; the others ``wait()`` for the file to go away."""

    def __init__(self, lock_file_path, wait_seconds=0.1, warn_after_seconds=None):
        self.lock_file_path = lock_file_path
        self.wait_seconds = wait_seconds
        self.fd = None
        self.warn_after_seconds = warn_after_seconds

    def try_acquire(self):
        """Create the lock file atomically: True if this call created it, False if it
        existed."""
        try:
            self.fd = os.open(self.lock_file_path, os.O_CREAT | os.O_EXCL)
            return True
        except FileExistsError:
            return False

    def wait(self):
        """Sleep ``wait_seconds`` at a time until the lock file is gone (warning once after
        ``warn_after_seconds``, when given)."""
        has_warned = False
        start_time = time.time()
        while os.path.exists(self.lock_file_path):
            time.sleep(self.wait_seconds)
            if self.warn_after_seconds is not None and not has_warned and \
                    time.time() - start_time > self.warn_after_seconds:
                warnings.warn(f'Waited on lock file "{self.lock_file_path}" for '
                              f'{self.warn_after_seconds} seconds.', stacklevel=2)
                has_warned = True

    def release(self):
        """Release the baton and remove its file."""
        if self.fd is not None:
            os.close(self.fd)
        os.remove(self.lock_file_path)
