"""Stand-in: utils.py imports these; the stand-in vLLM needs no weights."""


def snapshot_download(**_):
    return None


class HfFolder:
    @staticmethod
    def save_token(token):
        return None
