"""``python -m ember.distributed.launch``: PyTorch's deprecated launcher, torchrun's command line
(``ember.distributed.run``) plus ``--use-env``. Without it, each rank's script is also given
``--local-rank=N`` before its own arguments, as scripts written for the old launcher expect;
``LOCAL_RANK`` is set in either case."""
import sys
import warnings

from .run import get_args_parser, run

__all__ = ["main", "launch", "parse_args"]


def parse_args(args):
    parser = get_args_parser()
    parser.prog = "python -m ember.distributed.launch"
    parser.add_argument("--use-env", "--use_env", default=False, action="store_true",
                        help="Use environment variable to pass 'local rank'. For legacy reasons, "
                             "the default value is False. If set to True, the script will not "
                             "pass --local-rank as argument, and will instead set LOCAL_RANK.")
    return parser.parse_args(args)


def launch(args):
    if args.no_python and not args.use_env:
        raise ValueError("When using the '--no-python' flag, you must also set the '--use-env' "
                         "flag.")
    return run(args)


def main(args=None):
    warnings.warn("The module torch.distributed.launch is deprecated\nand will be removed in "
                  "future. Use torchrun.\nNote that --use-env is set by default in torchrun.\nIf "
                  "your script expects `--local-rank` argument to be set, please\nchange it to "
                  "read from `os.environ['LOCAL_RANK']` instead. See \nhttps://pytorch.org/docs/"
                  "stable/distributed.html#launch-utility for \nfurther instructions\n",
                  FutureWarning, stacklevel=2)
    return launch(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
